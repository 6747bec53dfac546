import { describe, expect, it } from 'vitest';
import { answerContent, chatTitle, filterPublicResponses, historyLoadLimit, messagesToChatItems, type RequestMessage, systemFirst } from '../../src/domain/workflow/messages.js';
import {
  chatResponseTokens,
  extendedQueries,
  historyPreview,
  messagesToHistory,
  MAX_SEARCH_QUERIES,
  parseQuestionList,
  presetQueries,
  renderQuotes,
  responseTokenLimit,
  trimMessages,
} from '../../src/domain/workflow/prompts.js';
import type { ChatValue } from '../../src/domain/workflow/types.js';
import { reportedTokens } from '../../src/domain/token-count.js';
import { decodeFromStorage, encodeForStorage, STORED_DEPTH } from '../../src/infra/storage-codec.js';

const text = (content: string): ChatValue => ({ type: 'text', text: { content } });

describe('messagesToChatItems', () => {
  it('converts roles, parts and tool calls; keeps an empty user text; merges same dataId', () => {
    const items = messagesToChatItems([
      { role: 'system', content: 'be nice' },
      { role: 'user', content: '' },
      { role: 'user', content: [{ type: 'text', text: 'look' }, { type: 'image_url', image_url: { url: 'http://x/i.png' } }], dataId: 'd1' },
      { role: 'user', content: [{ type: 'file_url', name: 'a.pdf', url: 'http://x/a.pdf' }], dataId: 'd1' },
      { role: 'assistant', content: 'ok', tool_calls: [{ id: 't1', function: { name: 'f', arguments: '{}' } }] },
      { role: 'tool', tool_call_id: 't1', content: 'result' },
    ]);
    expect(items.map((i) => i.obj)).toEqual(['System', 'Human', 'Human', 'AI']);
    expect(items[1]!.value).toEqual([text('')]);
    expect(items[2]!.value).toEqual([
      text('look'),
      { type: 'file', file: { type: 'image', name: '', url: 'http://x/i.png' } },
      { type: 'file', file: { type: 'file', name: 'a.pdf', url: 'http://x/a.pdf' } },
    ]);
    expect(items[3]!.value[1]).toMatchObject({ type: 'tool', tools: [{ id: 't1', response: 'result' }] });
  });

  it('merges consecutive messages of one role without dataIds into one item (two user messages are one question)', () => {
    const items = messagesToChatItems([
      { role: 'user', content: 'Translate to French:' },
      { role: 'user', content: 'good morning' },
    ]);
    expect(items).toEqual([{ obj: 'Human', value: [text('Translate to French:'), text('good morning')] }]);
    expect(messagesToChatItems([{ role: 'user', content: 'a', dataId: 'x' }, { role: 'user', content: 'b', dataId: 'y' }])).toHaveLength(2);
  });

  it('each call takes the first answer with its id (or function name) anywhere in the history, as a search of it would', () => {
    let seed = 11;
    const pick = (n: number) => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      return seed % n;
    };
    const ids = ['a', 'b', 'c', undefined];
    const messages: RequestMessage[] = [];
    for (let i = 0; i < 400; i++) {
      const id = ids[pick(ids.length)];
      const roll = pick(5);
      if (roll === 0) messages.push({ role: 'assistant', content: `say ${i}`, tool_calls: [{ id: id as string, function: { name: 'f' } }, { id: `x${i}` }] });
      else if (roll === 1) messages.push({ role: 'assistant', content: '', function_call: { name: id, arguments: '{}' } });
      else if (roll === 2) messages.push({ role: 'tool', tool_call_id: id, content: `tool ${i}` });
      else if (roll === 3) messages.push({ role: 'function', name: id, content: `function ${i}` });
      else messages.push({ role: 'user', content: `ask ${i}`, dataId: `d${i}` });
    }
    const responses = messagesToChatItems(messages).flatMap((item) => item.value.flatMap((value) => (value.type === 'tool' ? value.tools.map((tool) => tool.response) : [])));
    const searched = messages.flatMap((message) => [
      ...(message.tool_calls ?? []).map((call) => messages.find((m) => m.role === 'tool' && m.tool_call_id === call.id)),
      ...(message.function_call ? [messages.find((m) => m.role === 'function' && m.name === message.function_call?.name)] : []),
    ]);
    expect(responses.length).toBeGreaterThan(100);
    expect(responses).toEqual(searched.map((answer) => (typeof answer?.content === 'string' ? answer.content : '')));
  });
});

describe('answerContent', () => {
  const cases: [ChatValue[], boolean, unknown][] = [
    [[], false, ''],
    [[text('one')], true, 'one'],
    [[text('a'), { type: 'tool', tools: [] }, text('b')], false, 'a\nb'],
    [[text('a'), { type: 'tool', tools: [] }], true, [text('a'), { type: 'tool', tools: [] }]],
  ];
  for (const [values, detail, expected] of cases) it(`${values.length} values, detail ${detail}`, () => expect(answerContent(values, detail)).toEqual(expected));
});

describe('small rules', () => {
  it('titles, system-first order and history limit', () => {
    expect(chatTitle([text('a question that is longer than twenty characters')])).toBe('a question that is l');
    expect(chatTitle([])).toBe('新对话');
    // Never half an emoji (stored by BSON as U+FFFD): the cut steps back over it.
    expect(chatTitle([text(`${'a'.repeat(19)}😀 tail`)])).toBe('a'.repeat(19));
    expect(historyPreview([{ role: 'user', content: `${'a'.repeat(9999)}😀` }])[0]!.value).toBe('a'.repeat(9999));
    expect(systemFirst([{ obj: 'Human', value: [] }, { obj: 'System', value: [] }]).map((i) => i.obj)).toEqual(['System', 'Human']);
    expect(historyLoadLimit([{ inputs: [{ key: 'history', value: 30 }] }, { inputs: [{ key: 'maxContext', value: 4 }] }])).toBe(30);
    expect(historyLoadLimit([])).toBe(10);
  });

  it('public filter keeps only dataset, plugin and tool details', () => {
    const filtered = filterPublicResponses([
      { moduleType: 'chatNode', historyPreview: [] },
      { moduleType: 'datasetSearchNode', quoteList: [1], query: 'secret' },
      { moduleType: 'tools', toolDetail: [{ moduleType: 'httpRequest468', httpResult: 'x' }, { moduleType: 'datasetSearchNode', quoteList: [2] }] },
    ]);
    expect(filtered).toEqual([
      { moduleType: 'datasetSearchNode', quoteList: [1] },
      { moduleType: 'tools', toolDetail: [{ moduleType: 'datasetSearchNode', quoteList: [2] }] },
    ]);
  });

  const lists: [string, string[]][] = [
    ['["a","b"]', ['a', 'b']],
    ['Sure: ["x"] done', ['x']],
    ['no list', []],
    ['[broken', []],
    ['[1, "two"]', ['two']],
  ];
  for (const [reply, expected] of lists) it(`question list from ${reply}`, () => expect(parseQuestionList(reply)).toEqual(expected));

  it('quotes are rendered within the budget and messages trimmed from the oldest', () => {
    const quotes = [{ q: 'q1', a: 'a1' }, { q: 'q2', a: 'a2' }];
    expect(renderQuotes(quotes, '{{index}}. {{q}} → {{a}}', 1000)).toBe('1. q1 → a1\n------\n2. q2 → a2');
    expect(renderQuotes(quotes, '{{q}}', 1)).toBe('q1');
    const trimmed = trimMessages(
      [
        { role: 'system', content: 'sys' },
        { role: 'user', content: 'x'.repeat(400) },
        { role: 'user', content: 'last' },
      ],
      50,
    );
    expect(trimmed.map((m) => m.content)).toEqual(['sys', 'last']);
  });
});

/** What FerretDB accepts: no key with '.' or a leading '$', no array directly inside an array. */
function storable(value: unknown, inArray = false): boolean {
  if (Array.isArray(value)) return !inArray && value.every((item) => storable(item, true));
  if (typeof value === 'object' && value !== null) return Object.entries(value).every(([k, v]) => !k.includes('.') && !k.startsWith('$') && storable(v));
  return true;
}

describe('storage codec', () => {
  const cases: [string, unknown][] = [
    ['plain', { a: 1, b: [1, 2], c: { d: 'x' } }],
    ['dotted keys', { 'a.b': 1, $x: { 'y.z': [1] } }],
    ['nested arrays', [[1, 2], [[3]]]],
    ['mixed', { list: [{ 'k.v': [[1]] }] }],
    ['the marks as keys', { __json: 'x', __kv: [1], __arr: { a: 1 } }],
  ];
  for (const [name, value] of cases) {
    it(`round-trips ${name}`, () => {
      const stored = encodeForStorage(value);
      expect(storable(stored)).toBe(true);
      expect(decodeFromStorage(stored)).toEqual(value);
    });
  }
});

describe('storage codec depth', () => {
  /** Levels of documents and arrays, as the database counts them. */
  const depthOf = (value: unknown): number =>
    typeof value === 'object' && value !== null ? 1 + Math.max(0, ...Object.values(value as Record<string, unknown>).map(depthOf)) : 0;

  // MongoDB refuses a document deeper than 100 levels: a deep HTTP answer in a node response made
  // the turn's save fail (logged, the turn lost).
  it('keeps what is deeper than STORED_DEPTH as JSON text, whatever the shape, and gives it back', () => {
    let objects: unknown = 'leaf';
    for (let i = 0; i < 500; i++) objects = { [`k${i % 3 === 0 ? '.dot' : ''}`]: objects };
    let arrays: unknown = 1;
    for (let i = 0; i < 500; i++) arrays = [arrays];
    for (const value of [objects, arrays, { list: [objects, arrays] }]) {
      const stored = encodeForStorage(value);
      // A level or two over: one step of the encoding may take three.
      expect(depthOf(stored)).toBeLessThanOrEqual(STORED_DEPTH + 3);
      expect(storable(stored)).toBe(true);
      expect(decodeFromStorage(stored)).toEqual(value);
    }
  });

  it('reads a user object of the mark key stored before the mark existed', () => {
    expect(decodeFromStorage({ __json: 'not json' })).toEqual({ __json: 'not json' });
  });
});

describe('presetQueries', () => {
  it('reads a question written as a JSON array as the query list, without repeats', () => {
    expect(presetQueries('["office hours", "Office hours?", "refunds", "", 7]')).toEqual(['office hours', 'Office hours?', 'refunds']);
    expect(presetQueries(' ["a", "a!"] ')).toEqual(['a']);
    // Thousands of strings are searched as the first few, not as thousands of searches.
    const many = JSON.stringify(Array.from({ length: 2000 }, (_, i) => `query ${i}`));
    expect(presetQueries(many)).toEqual(Array.from({ length: MAX_SEARCH_QUERIES }, (_, i) => `query ${i}`));
    expect(extendedQueries('question', many)).toHaveLength(MAX_SEARCH_QUERIES);
  });

  it('leaves every other question alone', () => {
    for (const text of ['office hours', '[not json', '{"a":1}', '[]', '[1, 2]', '["", "  "]']) expect(presetQueries(text)).toBeUndefined();
  });
});

describe('previewItem (init history statistics)', () => {
  it('counts LLM nodes and quotes over the top level and its direct tool and plugin children; running time of the top level only', async () => {
    const { previewItem } = await import('../../src/platform/chat/history.service.js');
    const preview = previewItem({
      obj: 'AI',
      value: [],
      responseData: [
        { moduleType: 'workflowStart', runningTime: 0.01 },
        {
          moduleType: 'tools',
          runningTime: 2.5,
          historyPreview: [{ obj: 'Human', value: 'q' }, { obj: 'AI', value: 'a' }],
          toolDetail: [
            { moduleType: 'datasetSearchNode', runningTime: 0.4, quoteList: [{ id: 'x' }] },
            { moduleType: 'chatNode', runningTime: 1.2 },
          ],
        },
      ],
    });
    expect(preview).toMatchObject({ llmModuleAccount: 2, totalQuoteList: [{ id: 'x' }], totalRunningTime: 2.51, historyPreviewLength: 2 });
    expect(preview.responseData).toBeUndefined();
  });
});

describe('previewItem without node responses', () => {
  it('leaves an answer without responseData as it is (no zero statistics)', async () => {
    const { previewItem } = await import('../../src/platform/chat/history.service.js');
    expect(previewItem({ obj: 'AI', value: [text('hi')] })).toEqual({ obj: 'AI', value: [text('hi')] });
  });
});

describe('chatResponseTokens', () => {
  const model = { maxResponse: 16000, maxContext: 20000 };
  it('asks 4000 when the node has no value, the value within maxResponse otherwise', () => {
    expect(chatResponseTokens(undefined, model, 100)).toBe(4000);
    expect(chatResponseTokens('', model, 100)).toBe(4000);
    expect(chatResponseTokens(2000, model, 100)).toBe(2000);
    expect(chatResponseTokens('3000', model, 100)).toBe(3000);
    expect(chatResponseTokens(50000, model, 100)).toBe(16000);
  });
  it('leaves room for the prompt in the context window, and asks 200 when none is left', () => {
    expect(chatResponseTokens(16000, model, 6000)).toBe(14000);
    expect(chatResponseTokens(4000, model, 20000)).toBe(200);
    expect(chatResponseTokens(0, model, 100)).toBe(200);
  });
  it('asks a whole number of tokens', () => {
    expect(chatResponseTokens(2.5, model, 100)).toBe(2);
    expect(chatResponseTokens('2000.9', model, 100)).toBe(2000);
    expect(chatResponseTokens(0.5, model, 100)).toBe(200);
    expect(chatResponseTokens(-5, model, 100)).toBe(200);
    expect(chatResponseTokens(16000, model, 6000.5)).toBe(13999);
  });
});

describe('responseTokenLimit', () => {
  it.each([
    [undefined, 4000, 4000],
    ['', 4000, 4000],
    [2000, 4000, 2000],
    ['3000', 4000, 3000],
    [50000, 4000, 4000],
    [-5, 4000, 4000],
    [0, 4000, 4000],
    [2.5, 4000, 2],
    [0.5, 4000, 4000],
    ['abc', 4000, 4000],
    [Number.POSITIVE_INFINITY, 4000, 4000],
    [1000, 0, 1000],
    [undefined, 0, 4000],
    [undefined, 1500.7, 1500],
  ])('node value %j, maxResponse %j: %j', (requested, maxResponse, expected) => {
    expect(responseTokenLimit(requested, maxResponse)).toBe(expected);
  });
});

describe('reportedTokens', () => {
  it.each([
    [12, 12],
    [0, 0],
    ['12', undefined],
    [null, undefined],
    [undefined, undefined],
    [-3, undefined],
    [Number.NaN, undefined],
    [Number.POSITIVE_INFINITY, undefined],
    [{}, undefined],
  ])('%j: %j', (value, expected) => {
    expect(reportedTokens(value)).toBe(expected);
  });
});

describe('messagesToHistory', () => {
  it('gives what an AI node sent and its answer as chat items, files before the text of the last user message', () => {
    const image: ChatValue = { type: 'file', file: { type: 'image', name: '', url: 'https://images.example/cat.png' } };
    const history = messagesToHistory(
      [
        { role: 'system', content: 'Be kind.' },
        { role: 'user', content: 'earlier' },
        { role: 'assistant', content: 'earlier answer' },
        { role: 'user', content: 'Use the quote. Question: """what is this?"""' },
        { role: 'assistant', content: 'A cat.' },
      ],
      [image],
    );
    expect(history.map((item) => item.obj)).toEqual(['System', 'Human', 'AI', 'Human', 'AI']);
    expect(history[1]!.value).toEqual([{ type: 'text', text: { content: 'earlier' } }]);
    expect(history[3]!.value).toEqual([image, { type: 'text', text: { content: 'Use the quote. Question: """what is this?"""' } }]);
  });
});
