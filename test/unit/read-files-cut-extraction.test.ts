import { beforeEach, describe, expect, it, vi } from 'vitest';
import { buildNodeParams } from '../../src/domain/workflow/interpolate.js';
import type { NodeRunContext, RuntimeNode } from '../../src/domain/workflow/types.js';
import { DOCX_MIME, type ExtractionTask, extractText } from '../../src/infra/text-extract.js';
import { CUT_MESSAGE } from '../../src/platform/chat/workflow-nodes/call-cut.js';
import { createExtraRunners } from '../../src/platform/chat/workflow-nodes/extra-nodes.js';
import type { NodeDeps } from '../../src/platform/chat/workflow-nodes/node-deps.js';

/**
 * A readFiles node's text extraction ends with its turn: the extraction is handed the turn's
 * signal, and a docx read (two conversions, each in a worker) does not start its second once the
 * client hung up. The docx conversion is replaced by one the test answers, so no thread runs.
 */
const conversions = vi.hoisted(() => ({ docx: [] as { task: ExtractionTask; answer: (html: string) => void }[], markdown: 0 }));
vi.mock('../../src/infra/docx-html.js', async (importOriginal) => ({
  ...(await importOriginal<typeof import('../../src/infra/docx-html.js')>()),
  readDocxHtml: (_buffer: Buffer, task: ExtractionTask) => new Promise<string>((answer) => conversions.docx.push({ task, answer })),
}));
vi.mock('../../src/infra/html-to-markdown.js', async (importOriginal) => {
  const original = await importOriginal<typeof import('../../src/infra/html-to-markdown.js')>();
  return {
    ...original,
    htmlToMarkdownBounded: (...args: Parameters<typeof original.htmlToMarkdownBounded>) => {
      conversions.markdown += 1;
      return original.htmlToMarkdownBounded(...args);
    },
  };
});

/** What a docx file starts with (the conversion itself is the test's). */
const DOCX = Buffer.from([0x50, 0x4b, 0x03, 0x04, 0, 0, 0, 0]);

beforeEach(() => {
  conversions.docx.length = 0;
  conversions.markdown = 0;
});

async function firstConversion() {
  while (conversions.docx.length === 0) await new Promise((resolve) => setImmediate(resolve));
  return conversions.docx[0]!;
}

describe('a docx extraction ended by its signal', () => {
  it('answers as usual while the signal holds', async () => {
    const reading = extractText({ buffer: DOCX, filename: 'a.docx' }, { owner: 'team', signal: new AbortController().signal });
    (await firstConversion()).answer('<p>Kept.</p>');
    expect(await reading).toEqual({ format: 'docx', text: 'Kept.' });
    expect(conversions.markdown).toBe(1);
  });

  it('does not start its second conversion once the signal aborted, and rejects with its reason', async () => {
    const controller = new AbortController();
    const reading = extractText({ buffer: DOCX, filename: 'a.docx' }, { owner: 'team', signal: controller.signal });
    const first = await firstConversion();
    controller.abort();
    first.answer('<p>Too late.</p>');
    await expect(reading).rejects.toMatchObject({ name: 'AbortError' });
    expect(conversions.markdown).toBe(0);
  });
});

describe("a readFiles node's extraction", () => {
  it("is handed the turn's signal, and the file is recorded as cut once the client hung up", async () => {
    const turn = new AbortController();
    const deps = {
      teamId: 'team',
      signal: turn.signal,
      customFeedbacks: [],
      download: async () => ({ buffer: DOCX, contentType: DOCX_MIME }),
    } as unknown as NodeDeps;
    const { readFiles } = createExtraRunners(deps);
    const node: RuntimeNode = { nodeId: 'read', flowNodeType: 'readFiles', name: 'Read', inputs: [{ key: 'fileUrlList', value: ['http://files.test/a.docx', 'http://files.test/b.docx', 'http://files.test/c.docx'] }], outputs: [] };
    const params = buildNodeParams(node, [node], {});
    const context = { node, params, variables: {}, histories: [], query: [], runtimeNodes: [node], runtimeEdges: [], mode: 'chat', stream: false, emit: () => undefined, isAborted: () => turn.signal.aborted, runBudget: { remaining: 10 } };
    const running = readFiles!(context as unknown as NodeRunContext) as Promise<{ responseData: { readFilesResult: string } }>;
    const first = await firstConversion();
    expect(first.task).toMatchObject({ owner: 'team', signal: turn.signal });
    turn.abort();
    const { responseData } = await running;
    expect(responseData.readFilesResult).toContain(`File: a.docx\n<Content>\nThe file could not be read: ${CUT_MESSAGE}`);
    first.answer('<p>Too late.</p>');
    // The later files were not converted.
    expect(conversions.docx).toHaveLength(1);
  });
});
