import { describe, expect, it } from 'vitest';
import { csvRowsToMarkdownTable, parseCsv } from '../../src/infra/csv.js';
import { isAppError } from '../../src/infra/errors.js';

describe('parseCsv', () => {
  it.each([
    ['empty', '', []],
    ['blank lines only', '\n\n', []],
    ['simple', 'q,a\n1,2', [['q', 'a'], ['1', '2']]],
    ['BOM stripped', '\uFEFFq,a\nx,y', [['q', 'a'], ['x', 'y']]],
    ['CRLF', 'q,a\r\nx,y\r\n', [['q', 'a'], ['x', 'y']]],
    ['quoted comma', '"a, b",c', [['a, b', 'c']]],
    ['escaped quotes', '"say ""hi""",x', [['say "hi"', 'x']]],
    ['newline inside quotes', '"line 1\nline 2",x', [['line 1\nline 2', 'x']]],
    ['ragged rows and blank lines skipped', 'a,b,c\n\nd\ne,f', [['a', 'b', 'c'], ['d'], ['e', 'f']]],
    ['unicode', '问题,答案\n什么是知识库？,存放资料的地方', [['问题', '答案'], ['什么是知识库？', '存放资料的地方']]],
    ['empty cells kept', 'a,,c', [['a', '', 'c']]],
  ])('%s', (_name, text, expected) => {
    expect(parseCsv(text)).toEqual(expected);
  });

  it('an unclosed quote is a 400 naming the problem', () => {
    let caught: unknown;
    try {
      parseCsv('a,"b\nc,d');
    } catch (error) {
      caught = error;
    }
    expect(isAppError(caught)).toBe(true);
    expect((caught as { httpStatus: number }).httpStatus).toBe(400);
    expect((caught as Error).message).toMatch(/CSV text is malformed/);
  });
});

describe('csvRowsToMarkdownTable', () => {
  it.each([
    ['empty', [], ''],
    ['header and rows', [['q', 'a'], ['1', '2']], '| q | a |\n| --- | --- |\n| 1 | 2 |'],
    ['ragged rows keep their cells, newlines and pipes escaped', [['q', 'a', 'extra'], ['x\ny', 'b|c']], '| q | a | extra |\n| --- | --- | --- |\n| x\\ny | b\\|c |'],
    ['a header narrower than a row spans it', [['q'], ['1', '2']], '| q |  |\n| --- | --- |\n| 1 | 2 |'],
  ])('%s', (_name, rows, expected) => {
    expect(csvRowsToMarkdownTable(rows)).toBe(expected);
  });
});

describe('csvRowsToMarkdownTable on large files', () => {
  it('converts 200,000 rows (more than a spread call can take); the header spans the widest row anywhere', () => {
    const rows = Array.from({ length: 200_000 }, (_, i) => [`q${i}`, `a${i}`]);
    rows.push(['last', 'row', 'widest']);
    const lines = csvRowsToMarkdownTable(rows).split('\n');
    expect(lines).toHaveLength(200_002);
    expect(lines[0]).toBe('| q0 | a0 |  |');
    expect(lines[1]).toBe('| --- | --- | --- |');
    expect(lines[2]).toBe('| q1 | a1 |');
    expect(lines.at(-1)).toBe('| last | row | widest |');
  });

  // Every row was padded to the widest: one wide row made the text width × rows.
  it('stays within a few times the CSV text whatever the row widths', () => {
    const csv = `${Array.from({ length: 5_000 }, (_, i) => `c${i}`).join(',')}\n${'1\n'.repeat(5_000)}`;
    const table = csvRowsToMarkdownTable(parseCsv(csv));
    expect(table.length).toBeLessThan(csv.length * 4);
    expect(table.split('\n')).toHaveLength(5_002);
  });
});
