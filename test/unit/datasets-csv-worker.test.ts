import { beforeEach, describe, expect, it, vi } from 'vitest';
import { parseCsv } from '../../src/infra/csv.js';
import { decodeText, extractText } from '../../src/infra/text-extract.js';
import type { AuthContext } from '../../src/platform/auth/types.js';
import { readStoredQa, textOfStoredFile } from '../../src/platform/datasets/collections/collection-sources.js';
import { csvToQa, withoutNul } from '../../src/platform/datasets/collections/source-text.js';
import type { DatasetsContext } from '../../src/platform/datasets/context.js';
import { CSV_INLINE_MAX_BYTES } from '../../src/platform/datasets/files/csv-read.js';
import type { StoredFile } from '../../src/platform/datasets/files/file.repo.js';

/** Worker tasks started and the owners they named (the real pool runs them). */
const tasks = vi.hoisted(() => ({ started: 0, owners: [] as (string | undefined)[] }));
vi.mock('../../src/infra/worker-task.js', async (importOriginal) => {
  const original = await importOriginal<typeof import('../../src/infra/worker-task.js')>();
  return {
    ...original,
    runWorkerTask: (...args: Parameters<typeof original.runWorkerTask>) => {
      tasks.started += 1;
      tasks.owners.push(args[3]?.owner);
      return original.runWorkerTask(...args);
    },
  };
});

beforeEach(() => {
  tasks.started = 0;
  tasks.owners = [];
});

const auth = { authType: 'session', userId: 'u', teamId: 'team', tmbId: 'member', role: 'owner', teamPermission: 0, isRoot: false } as unknown as AuthContext;
const fileOf = (filename: string, contentType = 'text/plain') =>
  ({ _id: 'b'.repeat(24), filename, contentType, length: 0, uploadDate: new Date(), metadata: { teamId: 'team', tmbId: 'member' } }) as unknown as StoredFile;
const ctxOver = (file: StoredFile, buffer: Buffer) => ({ repos: { files: { find: async () => file, readBuffer: async () => buffer } } }) as unknown as DatasetsContext;

/** Rows of varying width, quoted cells with commas, quotes and line breaks, blank lines, pipes and tabs. */
function csvOf(rows: number): Buffer {
  const lines = ['index,content'];
  for (let i = 0; i < rows; i++) {
    if (i % 97 === 0) lines.push('');
    const extra = i % 13 === 0 ? `,third ${i},fourth` : '';
    lines.push(`question ${i},"answer ${i}, with a comma, a ""quote"" and\na line | break\t"${extra}`);
  }
  return Buffer.from(lines.join('\r\n'));
}

describe('CSV files past the inline size are read in a worker thread, with the same result', () => {
  const buffer = csvOf(8000);

  it('the Markdown text of an import', async () => {
    expect(buffer.length).toBeGreaterThan(CSV_INLINE_MAX_BYTES);
    const file = fileOf('table.csv');
    const text = await textOfStoredFile(file, buffer);
    expect(tasks.started).toBe(1);
    expect(tasks.owners).toEqual(['team']);
    expect(text).toBe(withoutNul((await extractText({ buffer, filename: 'table.csv', mimetype: 'text/plain' }, { owner: 'team' })).text));
  });

  it('the Q/A rows of a CSV import, of a .csv and of a text file', async () => {
    const csv = fileOf('qa.csv');
    const { rows } = await readStoredQa(ctxOver(csv, buffer), auth, csv._id);
    expect(tasks.started).toBe(1);
    expect(rows).toEqual(csvToQa(withoutNul(decodeText(buffer, 'qa.csv'))));
    const txt = fileOf('qa.txt');
    const fromText = await readStoredQa(ctxOver(txt, buffer), auth, txt._id);
    expect(tasks.started).toBe(2);
    expect(tasks.owners).toEqual(['team', 'team']);
    expect(fromText.rows).toEqual(csvToQa(withoutNul((await extractText({ buffer, filename: 'qa.txt' }, { owner: 'team' })).text)));
  });

  it('refuses what reading it inline refuses, with the same message', async () => {
    const malformed = Buffer.concat([buffer, Buffer.from('\r\nlast,"never closed')]);
    let inline = '';
    try {
      parseCsv(decodeText(malformed, 'bad.csv'));
    } catch (error) {
      inline = (error as Error).message;
    }
    expect(inline).toContain('malformed');
    await expect(textOfStoredFile(fileOf('bad.csv'), malformed)).rejects.toMatchObject({ httpStatus: 400, message: inline });
    const oneColumn = Buffer.from('only\n'.repeat(60_000));
    const file = fileOf('one.csv');
    await expect(readStoredQa(ctxOver(file, oneColumn), auth, file._id)).rejects.toMatchObject({ httpStatus: 400, message: expect.stringContaining('two columns') });
    expect(tasks.started).toBe(2);
  });

  it('a small CSV is read inline', async () => {
    const small = csvOf(20);
    expect(await textOfStoredFile(fileOf('small.csv'), small)).toBe(withoutNul((await extractText({ buffer: small, filename: 'small.csv' }, { owner: 'team' })).text));
    expect(tasks.started).toBe(0);
  });
});
