import { describe, expect, it } from 'vitest';
import { checkCondition, chooseBranch } from '../../src/domain/workflow/if-else.js';
import { WorkflowError } from '../../src/domain/workflow/workflow-error.js';
import { fillNodeText, formatValueType, replaceVariables } from '../../src/domain/workflow/interpolate.js';
import { selectHistories } from '../../src/domain/workflow/chat-values.js';
import type { ChatItem, RuntimeNode } from '../../src/domain/workflow/types.js';

describe('replaceVariables', () => {
  const cases: [string, Record<string, unknown>, string][] = [
    ['hi {{name}}', { name: 'Bo' }, 'hi Bo'],
    ['{{n}}+{{n}}', { n: 2 }, '2+2'],
    ['keep {{obj}}', { obj: { a: 1 } }, 'keep {{obj}}'],
    ['{{a.b}}', { 'a.b': 'dot' }, 'dot'],
    ['none {{missing}}', {}, 'none {{missing}}'],
  ];
  for (const [text, vars, expected] of cases) it(`${text} → ${expected}`, () => expect(replaceVariables(text, vars)).toBe(expected));
});

describe('fillNodeText (references)', () => {
  const nodes: RuntimeNode[] = [
    { nodeId: 'n1', flowNodeType: 'x', inputs: [], outputs: [{ id: 'o1', key: 'k', value: { a: 1 } }, { id: 'b', key: 'b', value: true }, { id: 'nil', key: 'nil', value: null }] },
  ];
  const cases: [string, string][] = [
    ['{{$n1.o1$}}', '{"a":1}'],
    ['{{$VARIABLE_NODE_ID.v$}}!', 'V!'],
    ['{{$n1.b$}}', '{{$n1.b$}}'],
    ['{{$n2.o1$}}', '{{$n2.o1$}}'],
    // A null is written as JSON (`null`), as the reference inserts any object.
    ['[{{$n1.nil$}}]', '[null]'],
    ['{{$VARIABLE_NODE_ID.none$}}', 'null'],
  ];
  for (const [text, expected] of cases) it(`${text} → ${expected}`, () => expect(fillNodeText(text, nodes, { v: 'V', none: null })).toBe(expected));
});

describe('formatValueType', () => {
  const cases: [unknown, string, unknown][] = [
    [5, 'string', '5'],
    [{ a: 1 }, 'string', '{"a":1}'],
    ['7', 'number', 7],
    ['true', 'boolean', true],
    ['yes', 'boolean', false],
    ['[{"id":"1"}]', 'datasetQuote', [{ id: '1' }]],
    ['x', 'any', 'x'],
    // 4.8.10 formats a null like any value; only undefined passes untouched.
    [null, 'string', 'null'],
    [null, 'number', 0],
    [null, 'boolean', false],
    [null, 'datasetQuote', null],
    [null, 'any', null],
    [undefined, 'string', undefined],
  ];
  for (const [value, type, expected] of cases) it(`${JSON.stringify(value)} as ${type}`, () => expect(formatValueType(value, type)).toEqual(expected));
});

describe('ifElse conditions', () => {
  const cases: [unknown, string, string, boolean][] = [
    ['', 'isEmpty', '', true],
    [[], 'isEmpty', '', true],
    ['a', 'isNotEmpty', '', true],
    [3, 'equalTo', '3', true],
    ['abc', 'include', 'b', true],
    [['x', 'y'], 'include', 'y', true],
    ['abc', 'startWith', 'ab', true],
    ['abc', 'endWith', 'bc', true],
    ['abc', 'reg', '/^a.c$/', true],
    ['abc', 'lengthGreaterThan', '2', true],
    [10, 'lessThan', '9', false],
    // The reference's coercions: String() of the value, lengths only of text and lists.
    [['a'], 'equalTo', 'a', true],
    [['a', 'b'], 'equalTo', 'a,b', true],
    [undefined, 'equalTo', '', false],
    [undefined, 'equalTo', 'undefined', true],
    [null, 'notEqual', '', true],
    [{ a: 1 }, 'equalTo', '{"a":1}', true],
    [123, 'include', '2', false],
    [[1, 2], 'include', '2', true],
    [5, 'lengthEqualTo', '0', false],
    [5, 'lengthNotEqualTo', '0', true],
    [undefined, 'lengthLessThan', '3', false],
    ['ab', 'lengthLessThan', '3', true],
    [12, 'startWith', '1', false],
    [12, 'reg', '1', false],
    ['abc', 'reg', '', false],
    ['中文', 'reg', '[\\u4e00-\\u9fa5]', true],
    ['latin', 'reg', '^[\\u4e00-\\u9fa5]+$', false],
  ];
  for (const [value, condition, expected, result] of cases) {
    it(`${JSON.stringify(value)} ${condition} ${expected}`, () => expect(checkCondition(value, condition, expected)).toBe(result));
  }
  it('picks ELSE IF n and ELSE', () => {
    const branches = [
      { condition: 'AND' as const, list: [{ variable: 'a', condition: 'equalTo', value: '1' }] },
      { condition: 'OR' as const, list: [{ variable: 'a', condition: 'equalTo', value: '2' }, { variable: 'a', condition: 'equalTo', value: '3' }] },
    ];
    expect(chooseBranch(branches, () => '3')).toBe('ELSE IF 1');
    expect(chooseBranch(branches, () => '9')).toBe('ELSE');
  });
  it('a branch without conditions holds when joined by AND, not by OR', () => {
    expect(chooseBranch([{ condition: 'OR', list: [] }, { condition: 'AND', list: [] }], () => '')).toBe('ELSE IF 1');
  });
  it('bounds the regex work of one call: a reg condition it cannot pay for fails the node, naming it', () => {
    // 10 M characters against a 1,003-instruction program: minutes if it ran.
    const huge = 'ab'.repeat(5_000_000);
    const costly = { variable: 'text', condition: 'reg', value: '/[^x]{1000}[^ab]/' };
    const branches = [
      { condition: 'AND' as const, list: [{ variable: 'text', condition: 'isEmpty' }] },
      { condition: 'AND' as const, list: [{ variable: 'text', condition: 'include', value: 'ab' }, costly] },
    ];
    expect(() => chooseBranch(branches, () => huge)).toThrow(WorkflowError);
    expect(() => chooseBranch(branches, () => huge)).toThrow(/^ifElse branch ELSE IF 1, condition 2 \(reg\): testing \/\[\^x\]\{1000\}\[\^ab\]\/ \(1,003 instructions\) against 10,000,000 characters/);
    // Conditions of one call share the budget: 5,000 of them against 1,000 characters are refused at the second.
    const many = Array.from({ length: 5000 }, () => costly);
    expect(() => chooseBranch([{ condition: 'OR', list: many }], () => 'ab'.repeat(500))).toThrow(/^ifElse branch IF, condition 2 \(reg\): .*spent already/);
    // Conditions stop once a branch's answer is known, so a costly one after it is not run.
    expect(chooseBranch([{ condition: 'AND', list: [{ variable: 'text', condition: 'isEmpty' }, costly] }], () => huge)).toBe('ELSE');
    expect(chooseBranch([{ condition: 'OR', list: [{ variable: 'text', condition: 'reg', value: '/^ab/' }, costly] }], () => 'ab'.repeat(50_000))).toBe('IF');
    // Ordinary patterns against a long text still decide.
    const question = `Order 12345: ${'please ship it soon. '.repeat(2000)}`;
    expect(chooseBranch([{ condition: 'AND', list: [{ variable: 'q', condition: 'reg', value: '/^order \\d+/i' }, { variable: 'q', condition: 'reg', value: 'ship' }] }], () => question)).toBe('IF');
  });
});

describe('selectHistories', () => {
  const items: ChatItem[] = [
    { obj: 'System', value: [] },
    ...Array.from({ length: 6 }, (_, i): ChatItem => ({ obj: i % 2 ? 'AI' : 'Human', value: [{ type: 'text', text: { content: String(i) } }] })),
  ];
  it('keeps system items and the last n rounds', () => expect(selectHistories(1, items)).toHaveLength(3));
  it('0 means none', () => expect(selectHistories(0, items)).toEqual([]));
});
