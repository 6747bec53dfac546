/**
 * HTML → Markdown for link collections and .html/.docx files (as the reference's link and file import): cheerio
 * picks the content (a CSS selector, default `body`) and drops noise; turndown writes ATX
 * headings, `-` bullets, fenced code, `_`/`**` emphasis and GFM tables/strikethrough.
 * Relative links and image sources become absolute against `baseUrl`.
 */
import { gfm } from '@joplin/turndown-plugin-gfm';
import * as cheerio from 'cheerio';
import TurndownService from 'turndown';
import { Errors } from './errors.js';
import { runWorkerTask, type WorkerTaskOwner, workerEntrySource } from './worker-task.js';

export interface HtmlToMarkdownOptions {
  /** CSS selector of the content; all matches are joined. Default `body` (or the whole document). */
  selector?: string;
  /** The page URL, to make relative href/src absolute. */
  baseUrl?: string;
}

// Never content: scripts, styles, embedded frames, forms' machinery, icon fonts.
const ALWAYS_REMOVED = 'script, style, noscript, template, iframe, object, embed, svg, canvas, link, meta, button, input, select, textarea, i:empty';
// Page chrome, removed only when no selector says what the content is.
const CHROME = 'nav, aside, footer, [role="navigation"], [role="banner"], [role="contentinfo"], [aria-hidden="true"]';

function createTurndown(): TurndownService {
  const service = new TurndownService({
    headingStyle: 'atx',
    bulletListMarker: '-',
    codeBlockStyle: 'fenced',
    fence: '```',
    emDelimiter: '_',
    strongDelimiter: '**',
    linkStyle: 'inlined',
  });
  service.use(gfm);
  listTableRowsOnce(service);
  // A <pre> without <code> is still a code block; its class names the language.
  service.addRule('bare-pre', {
    filter: (node) => node.nodeName === 'PRE' && !node.querySelector('code'),
    replacement: (_content, node) => {
      const element = node as unknown as { getAttribute(name: string): string | null; textContent: string | null };
      const language = (element.getAttribute('class') ?? '').replace(/^(language|lang)-/, '').split(/\s+/)[0] ?? '';
      return `\n\n\`\`\`${language}\n${(element.textContent ?? '').replace(/\n$/, '')}\n\`\`\`\n\n`;
    },
  });
  return service;
}

type TableNode = TurndownService.Node & { nodeName: string; parentNode: TableNode | null };

/** gfm's own `nodeParentTable`: the nearest enclosing TABLE. */
function enclosingTable(node: TableNode): TableNode | null {
  for (let parent = node.parentNode; parent; parent = parent.parentNode) if (parent.nodeName === 'TABLE') return parent;
  return null;
}

function isRuleFor(rule: TurndownService.Rule, nodeName: string, options: TurndownService.Options): boolean {
  if (typeof rule.filter !== 'function') return rule.filter === nodeName.toLowerCase();
  try {
    return (rule.filter as (node: unknown, options: TurndownService.Options) => unknown)({ nodeName }, options) === true;
  } catch {
    return false;
  }
}

/**
 * The GFM plugin reads `table.rows` inside loops (column count, each column's alignment), and
 * turndown's DOM builds that list by walking the whole table on every read: a 2,000-row table
 * took ~25 s, quadratic in its rows. While gfm's row and table rules run, a table lists its rows
 * once, on first read; the output is unchanged.
 */
function listTableRowsOnce(service: TurndownService): void {
  for (const rule of service.rules.array) {
    const replacement = rule.replacement;
    const isRow = rule.filter === 'tr';
    if (!replacement || !(isRow || isRuleFor(rule, 'TABLE', service.options))) continue;
    rule.replacement = function (this: unknown, content, node, options) {
      const table = isRow ? enclosingTable(node as unknown as TableNode) : (node as unknown as TableNode);
      if (!table || Object.hasOwn(table, 'rows')) return replacement.call(this, content, node, options);
      let rows: unknown[] | undefined;
      // The prototype's getter, read with the table as receiver.
      const listRows = () => Array.from(Reflect.get(Object.getPrototypeOf(table), 'rows', table) as ArrayLike<unknown>);
      Object.defineProperty(table, 'rows', { configurable: true, get: () => (rows ??= listRows()) });
      try {
        return replacement.call(this, content, node, options);
      } finally {
        delete (table as { rows?: unknown }).rows;
      }
    };
  }
}

const turndown = createTurndown();

function absolutise(value: string, baseUrl: string | undefined): string | undefined {
  const trimmed = value.trim();
  if (/^(javascript|vbscript):/i.test(trimmed)) return undefined;
  if (!baseUrl || /^(data|mailto|tel):/i.test(trimmed) || trimmed.startsWith('#')) return trimmed;
  try {
    return new URL(trimmed, baseUrl).href;
  } catch {
    return trimmed;
  }
}

/**
 * Cleanup of the result (as the reference's simpleMarkdownText): turndown's protective
 * backslashes before Markdown punctuation removed (they only hurt search), no trailing
 * spaces, at most one blank line in a row.
 */
export function tidyMarkdown(markdown: string): string {
  // Trailing blanks line by line: /[ \t]+\n/g retries every start in a long run of spaces
  // without a newline (a <pre> of 80,000 spaces took seconds).
  const lines = markdown
    .replace(/\\([\\`*_{}[\]()#+\-.!|~>])/g, '$1')
    .replace(/\r\n?/g, '\n')
    .split('\n');
  return lines
    .map(withoutTrailingBlanks)
    .join('\n')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
}

function withoutTrailingBlanks(line: string): string {
  let end = line.length;
  while (end > 0 && (line[end - 1] === ' ' || line[end - 1] === '\t')) end--;
  return end === line.length ? line : line.slice(0, end);
}

/**
 * Whether a page holds a run of whitespace this long: turndown's whitespace regexes are
 * quadratic on one (inside <pre>), so such a page is converted in the worker. A character
 * reference counts as whitespace (`&nbsp;` is), and tags neither count nor end a run (a run split
 * by empty tags is one run of text). One pass.
 */
const LONG_WHITESPACE_RUN = 2_000;
export function hasLongWhitespaceRun(html: string): boolean {
  let run = 0;
  let tagsLeft = true;
  for (let at = 0; at < html.length; at++) {
    const code = html.charCodeAt(at);
    let end = -1;
    // A `<` not followed by a name, `/`, `!` or `?` is text.
    if (code === 0x3c && tagsLeft && /[A-Za-z/!?]/.test(html[at + 1] ?? '')) {
      end = html.indexOf('>', at);
      tagsLeft = end >= 0;
    } else if (code === 0x26) end = referenceEnd(html, at);
    if (end >= 0 && code === 0x3c) at = end;
    else if (end < 0 && !isWhitespace(code)) run = 0;
    else {
      at = Math.max(at, end);
      if (++run >= LONG_WHITESPACE_RUN) return true;
    }
  }
  return false;
}

/** Where a character reference starting at `at` ends (`&name;`, `&#…;`, at most 32 characters): -1 for none. */
function referenceEnd(html: string, at: number): number {
  for (let end = at + 1; end < html.length && end <= at + 32; end++) if (html[end] === ';') return end;
  return -1;
}

/** What `\s` matches. */
function isWhitespace(code: number): boolean {
  return (code >= 0x09 && code <= 0x0d) || code === 0x20 || code === 0xa0 || code === 0x1680 || (code >= 0x2000 && code <= 0x200a) || code === 0x2028 || code === 0x2029 || code === 0x202f || code === 0x205f || code === 0x3000 || code === 0xfeff;
}

export function htmlToMarkdown(html: string, options: HtmlToMarkdownOptions = {}): { title: string; markdown: string } {
  const $ = cheerio.load(html ?? '');
  const title = ($('head > title').first().text() || $('title').first().text() || $('h1').first().text()).replace(/\s+/g, ' ').trim();

  $(ALWAYS_REMOVED).remove();
  if (!options.selector) $(CHROME).remove();
  $('a').each((_index, element) => {
    const link = $(element);
    if (!link.text().trim() && link.children().length === 0) {
      link.remove();
      return;
    }
    const href = link.attr('href');
    if (href === undefined) return;
    const absolute = absolutise(href, options.baseUrl);
    if (absolute === undefined) link.removeAttr('href');
    else link.attr('href', absolute);
  });
  $('img').each((_index, element) => {
    const image = $(element);
    const source = (image.attr('src') ?? '').trim();
    // Inline (data: URI) images would put kilobytes of base64 into the text; they are not imported.
    const absolute = source && !/^data:/i.test(source) ? absolutise(source, options.baseUrl) : undefined;
    if (absolute === undefined) image.remove();
    else image.attr('src', absolute);
  });

  let selected: ReturnType<typeof $>;
  try {
    selected = options.selector ? $(options.selector) : $('body');
  } catch {
    throw Errors.missingParams(`selector '${options.selector}' is not a valid CSS selector`);
  }
  const parts = selected.length > 0 ? selected.toArray().map((element) => $.html(element)) : options.selector ? [] : [$.root().html() ?? ''];
  const markdown = parts.map((part) => tidyMarkdown(turndown.turndown(part))).filter(Boolean).join('\n\n');
  return { title, markdown };
}

/**
 * Pages converted inline: with the default selector, at most this long and with at most
 * INLINE_MAX_TAGS tag openings. Conversion is not linear: parse5 scans its stack of open elements
 * on every tag (quadratic in nesting: 16,000 nested divs, 176 KB, took 7.7 s), reopens unclosed
 * formatting elements in every new block (a 3 KB page of 200 distinct `<b>`s took seconds), and
 * flat pages cost ~3 µs per byte. Bounding the tags bounds all of these (at 64 tags, the worst of
 * those shapes took tens of ms on a loaded 2-core VM); everything else goes to the worker.
 */
export const INLINE_MAX_CHARS = 16 * 1024;
export const INLINE_MAX_TAGS = 64;
export const HTML_CONVERT_TIMEOUT_MS = 20_000;
const WORKER_HEAP_MB = 256;

/** Whether a page is small and plain enough to convert on the event loop (see INLINE_MAX_CHARS). */
export function convertsInline(html: string): boolean {
  if (html.length > INLINE_MAX_CHARS) return false;
  let tags = 0;
  for (let at = html.indexOf('<'); at !== -1; at = html.indexOf('<', at + 1)) if (++tags > INLINE_MAX_TAGS) return false;
  return !hasLongWhitespaceRun(html);
}

/** An HTML file's bytes, decoded in the worker as decodeText does (its 400s for binary or invalid text too). */
export interface HtmlFileBytes {
  bytes: Uint8Array;
  filename: string;
}

/**
 * `htmlToMarkdown` that never blocks the event loop on hostile input: a user's CSS selector can
 * take minutes on a crafted page (`:not(...)`, long descendant chains over deep nesting), deep or
 * tag-heavy pages take seconds (INLINE_MAX_CHARS), and very deep pages overflow turndown's
 * recursion. All but tiny pages with the default selector run in a worker thread with time and
 * heap limits; any failure is a 400 naming `field`. A file's bytes (`HtmlFileBytes`) are decoded
 * there too. `owner`: the team the page is converted for, whose turn the worker task waits for.
 */
export async function htmlToMarkdownBounded(
  html: string | HtmlFileBytes,
  options: HtmlToMarkdownOptions = {},
  limits: WorkerTaskOwner & { field?: string; timeoutMs?: number },
): Promise<{ title: string; markdown: string }> {
  const field = limits.field ?? 'file';
  const customSelector = options.selector !== undefined && options.selector.trim() !== 'body';
  if (!customSelector && typeof html === 'string' && convertsInline(html)) {
    try {
      return htmlToMarkdown(html, options);
    } catch (error) {
      if (error instanceof RangeError) throw Errors.missingParams(`Invalid field '${field}': the page is nested too deeply to convert`);
      throw error;
    }
  }
  const timeoutMs = limits.timeoutMs ?? HTML_CONVERT_TIMEOUT_MS;
  const refused = (why: string) => Errors.missingParams(`Invalid field '${field}': the page could not be converted (${why})`);
  // A file's bytes are copied once, into memory of their own that is handed over (the caller keeps its Buffer).
  const page = typeof html === 'string' ? html : { bytes: new Uint8Array(html.bytes), filename: html.filename };
  const transferList = typeof page === 'string' ? [] : [page.bytes.buffer as ArrayBuffer];
  const outcome = await runWorkerTask<{ result?: { title: string; markdown: string }; error?: string; invalidInput?: boolean }>(
    workerEntrySource(import.meta.url, './html-to-markdown-worker'),
    { eval: true, workerData: { html: page, options }, transferList, resourceLimits: { maxOldGenerationSizeMb: WORKER_HEAP_MB } },
    timeoutMs,
    // The caller's signal too: a chat turn whose client hung up frees the worker's slot at once.
    { owner: limits.owner, signal: limits.signal },
  );
  if ('failure' in outcome) {
    const { failure } = outcome;
    if (failure.kind === 'timeout') throw refused(`longer than ${timeoutMs / 1000} s: selector too complex or page too large`);
    throw refused(failure.kind === 'error' ? failure.message : `the converter stopped, exit code ${failure.code}`);
  }
  const { message } = outcome;
  if (message.result) return message.result;
  throw message.invalidInput ? Errors.missingParams(message.error ?? 'invalid input') : refused(message.error ?? 'unknown error');
}
