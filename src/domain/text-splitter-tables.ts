/** Markdown tables for the splitter: recognise them, find them inside text, cut them by rows. */

const SEPARATOR_ROW = /^\|?(?:[ \t]*:?-+:?[ \t]*\|)+(?:[ \t]*:?-+:?[ \t]*)?$/;

const isRow = (line: string) => {
  const trimmed = line.trim();
  return trimmed.length >= 2 && trimmed.startsWith('|') && trimmed.endsWith('|');
};

const isSeparator = (line: string) => SEPARATOR_ROW.test(line.trim()) && line.includes('-');

/** Header row, separator row, then only rows (blank lines allowed), every row wrapped in `|`. */
export function isMarkdownTable(text: string): boolean {
  if (!text.includes('|')) return false;
  const lines = text.trim().split('\n');
  if (lines.length < 2) return false;
  if (!isRow(lines[0]!) || !isSeparator(lines[1]!)) return false;
  return lines.slice(2).every((line) => !line.trim() || isRow(line));
}

/**
 * Cut a table into chunks of whole rows; each chunk repeats the header and a regenerated
 * separator so it reads as a table on its own. A chunk closes before the row that would take it
 * past 1.2 × chunkLen, but only once its rows are as long as the header they repeat: the copies
 * never outweigh the rows (a header longer than 1.2 × chunkLen was copied onto every row, so a
 * 840 KB table with a 400 KB header made 44 GB of chunks).
 * Undefined when the header and separator are longer than `maxHeader`: the caller cuts the table
 * as text, the header once.
 */
export function splitMarkdownTable(table: string, chunkLen: number, maxHeader: number): string[] | undefined {
  const lines = table.trim().split('\n');
  const header = lines[0]!.trim();
  const columns = Math.max(1, header.split('|').length - 2);
  const head = `${header}\n| ${Array.from({ length: columns }, () => '---').join(' | ')} |\n`;
  if (head.length > maxHeader) return undefined;
  const chunks: string[] = [];
  let chunk = head;
  for (const line of lines.slice(2)) {
    const row = line.trim();
    if (!row) continue;
    if (chunk.length >= 2 * head.length && chunk.length + row.length > chunkLen * 1.2) {
      chunks.push(chunk.trimEnd());
      chunk = head;
    }
    chunk += `${row}\n`;
  }
  if (chunk.length > head.length || chunks.length === 0) chunks.push(chunk.trimEnd());
  return chunks;
}

/**
 * Cut text into alternating non-table and table parts (concatenation gives the text back).
 * A table starts at a row followed by a separator row and runs while lines are rows.
 */
export function splitTableBlocks(text: string): string[] {
  const lines = text.split('\n');
  const parts: string[] = [];
  let current: string[] = [];
  let inTable = false;
  const flush = () => {
    if (current.length) parts.push(current.join('\n'));
    current = [];
  };
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    if (!inTable && isRow(line) && isSeparator(lines[i + 1] ?? '')) {
      flush();
      inTable = true;
    } else if (inTable && !isRow(line)) {
      flush();
      inTable = false;
    }
    current.push(line);
  }
  flush();
  // Re-attach the newlines that join the parts, to the end of the earlier part.
  return parts.map((part, index) => (index < parts.length - 1 ? `${part}\n` : part));
}
