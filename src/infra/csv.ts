/**
 * CSV text → rows of cells with a real RFC 4180 parser (quoted cells, embedded commas,
 * quotes and newlines). A leading BOM is stripped; rows may have different lengths; blank
 * lines are skipped. Malformed input (an unclosed quote) is a 400 naming the line.
 */
import { parse } from 'csv-parse/sync';
import { Errors } from './errors.js';

/** The parser's options: rows of any length, blank lines skipped, stray quotes kept as text. */
export const CSV_PARSE_OPTIONS = { bom: true, relax_column_count: true, skip_empty_lines: true, relax_quotes: true } as const;

export function parseCsv(text: string): string[][] {
  const input = (text ?? '').replace(/^\uFEFF/, '');
  if (!input.trim()) return [];
  try {
    return parse(input, CSV_PARSE_OPTIONS) as string[][];
  } catch (error) {
    const line = (error as { lines?: number }).lines;
    throw Errors.missingParams(`The CSV text is malformed${line ? ` near line ${line}` : ''}: ${(error as Error).message}`);
  }
}

/**
 * Rows as Markdown table text (first row = header), `\n` inside cells written as `\\n` (as the
 * reference's CSV import writes them). The header and separator span the widest row, so every
 * cell is in a column; other rows keep their own cells (a table row with fewer cells than the
 * header reads as one with empty ones). Padding every row to the widest made the text width ×
 * rows: one 5,000-cell row in a 20 KB file gave 75 MB.
 */
export function csvRowsToMarkdownTable(rows: string[][]): string {
  if (rows.length === 0) return '';
  // A loop, not Math.max(...): spreading some 125,000 rows overflows the call stack.
  let width = 0;
  for (const row of rows) width = Math.max(width, row.length);
  const cell = (value: string | undefined) => (value ?? '').replace(/\r?\n/g, '\\n').replace(/\|/g, '\\|').trim();
  const line = (row: string[], cells = row.length) => `| ${Array.from({ length: cells }, (_, i) => cell(row[i])).join(' | ')} |`;
  const [header, ...body] = rows;
  return [line(header!, width), `| ${Array.from({ length: width }, () => '---').join(' | ')} |`, ...body.map((row) => line(row))].join('\n');
}
