import { beforeEach, describe, expect, it, vi } from 'vitest';
import type { NodeRunContext } from '../../src/domain/workflow/types.js';
import type { AuthContext } from '../../src/platform/auth/types.js';
import { createExtraRunners } from '../../src/platform/chat/workflow-nodes/extra-nodes.js';
import type { NodeDeps } from '../../src/platform/chat/workflow-nodes/node-deps.js';
import { readLink, readUsableFile } from '../../src/platform/datasets/collections/collection-sources.js';
import type { DatasetsContext } from '../../src/platform/datasets/context.js';
import { createLinkReadTurns } from '../../src/platform/datasets/files/link-read-turns.js';
import type { StoredFile } from '../../src/platform/datasets/files/file.repo.js';
import { createFileService } from '../../src/platform/datasets/files/file.service.js';
import { splitStoredFile } from '../../src/platform/datasets/files/large-text.js';
import { makeDocx, makePdf } from '../fixtures/files/make-fixtures.js';

/**
 * Which owner each entry point names for its worker tasks. The pool is replaced by one answer
 * every converter reads its part of (PDF text, docx HTML, converted page), so no thread runs.
 */
const owners = vi.hoisted(() => [] as (string | undefined)[]);
vi.mock('../../src/infra/worker-task.js', async (importOriginal) => ({
  ...(await importOriginal<typeof import('../../src/infra/worker-task.js')>()),
  runWorkerTask: async (_source: string, _options: unknown, _timeoutMs: number, task?: { owner: string | undefined }) => {
    owners.push(task?.owner);
    return { message: { text: 'Converted.', html: '<p>Converted.</p>', result: { title: 'Page', markdown: 'Converted.' } } };
  },
}));
vi.mock('../../src/infra/outbound-fetch.js', async (importOriginal) => ({
  ...(await importOriginal<typeof import('../../src/infra/outbound-fetch.js')>()),
  safeFetch: async (url: string) => ({ status: 200, headers: {}, body: Buffer.alloc(0), finalUrl: url, text: () => '<article><p>Page</p></article>' }),
}));

beforeEach(() => {
  owners.length = 0;
});

const FILE_ID = 'a'.repeat(24);
const auth = { authType: 'session', userId: 'u', teamId: 'team-a', tmbId: 'member', role: 'owner', teamPermission: 0, isRoot: false } as unknown as AuthContext;

/** The datasets context over one stored file of team A. */
function contextOver(filename: string, buffer: Buffer): DatasetsContext {
  const file = { _id: FILE_ID, filename, contentType: 'application/octet-stream', length: buffer.length, uploadDate: new Date(), metadata: { teamId: 'team-a', tmbId: 'member' } };
  const files = { find: async () => file as unknown as StoredFile, readBuffer: async () => buffer };
  return { repos: { files }, config: { OUTBOUND_TIMEOUT_MS: 1000, OUTBOUND_MAX_BYTES: 1024, SSRF_ALLOW_PRIVATE: false }, linkReads: createLinkReadTurns() } as unknown as DatasetsContext;
}

describe('conversions wait for the turn of the team they run for', () => {
  it("a collection's file is read for the file's team", async () => {
    // As an import from a file reads it (collection-import.service.ts fromFileId).
    const { file, buffer } = await readUsableFile(contextOver('report.pdf', makePdf([{ lines: ['x'] }])), auth, FILE_ID);
    const { items } = await splitStoredFile(file, buffer, { chunkLen: 512, overlapRatio: 0.2, customReg: [] });
    expect(items).toEqual([{ q: 'Converted.', chunkIndex: 0 }]);
    expect(owners).toEqual(['team-a']);
  });

  it("a chunk preview that reads the whole file converts it for the file's team", async () => {
    const service = createFileService(contextOver('handbook.docx', makeDocx(['x'])));
    const chunks = await service.previewChunks(auth, { type: 'fileLocal', sourceId: FILE_ID, chunkSize: 512, overlapRatio: 0.2 });
    expect(chunks).toEqual([{ q: 'Converted.', a: '' }]);
    expect(owners).toEqual(['team-a']);
  });

  it('a web page with a selector is converted for the team named', async () => {
    const page = await readLink(contextOver('unused.txt', Buffer.alloc(0)), 'https://example.com/', 'article', { owner: 'team-b' });
    expect(page.text).toBe('Converted.');
    expect(owners).toEqual(['team-b']);
  });

  it("the file tools' web pages (preview, chunk preview, urlFetch) are converted for the caller's team", async () => {
    const service = createFileService(contextOver('unused.txt', Buffer.alloc(0)));
    await service.previewContent(auth, { type: 'link', sourceId: 'https://example.com/', selector: 'article' });
    await service.previewChunks(auth, { type: 'link', sourceId: 'https://example.com/', selector: 'article', chunkSize: 512, overlapRatio: 0.2 });
    const fetched = await service.urlFetch(auth, ['https://example.com/'], 'article');
    expect(fetched[0]?.content).toBe('Converted.');
    expect(owners).toEqual(['team-a', 'team-a', 'team-a']);
  });

  it("the readFiles node reads its documents for the run's team", async () => {
    const download = async () => ({ buffer: makePdf([{ lines: ['x'] }]), contentType: 'application/pdf' });
    const { readFiles } = createExtraRunners({ teamId: 'team-chat', download } as unknown as NodeDeps);
    const result = await readFiles!({ params: { fileUrlList: ['https://example.com/a.pdf', 'https://example.com/b.pdf'] }, histories: [] } as unknown as NodeRunContext);
    expect(result.outputs?.system_text).toContain('Converted.');
    expect(owners).toEqual(['team-chat', 'team-chat']);
  });
});
