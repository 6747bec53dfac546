import { describe, expect, it } from 'vitest';
import { isAppError } from '../../src/infra/errors.js';
import { hasLongWhitespaceRun, htmlToMarkdown, htmlToMarkdownBounded, tidyMarkdown } from '../../src/infra/html-to-markdown.js';
import { workerTaskLoad } from '../../src/infra/worker-task.js';

const page = `<html><head><title> My  Page </title><style>.x{}</style><script>alert(1)</script></head><body>
<nav><a href="/home">Home</a></nav>
<article><h1>Heading</h1><p>Some <strong>bold</strong>, <em>em</em> and <del>old</del> text with a <a href="/docs/a?b=1">link</a>, a <a href="other.html">relative one</a> and <a href="javascript:alert(1)">bad</a>.</p>
<ul><li>one</li><li>two</li></ul>
<pre class="python">print("hi")
x = 1</pre>
<pre><code class="language-js">const a = 1;</code></pre>
<table><thead><tr><th>A</th><th>B</th></tr></thead><tbody><tr><td>1</td><td>2</td></tr></tbody></table>
<p><img src="img/p.png" alt="pic"><a href="/empty"></a><i class="icon"></i></p>
</article><aside>Related links</aside><footer>Copyright</footer></body></html>`;

describe('htmlToMarkdown', () => {
  const { title, markdown } = htmlToMarkdown(page, { baseUrl: 'https://example.com/section/page.html' });

  it('takes the <title> as title', () => {
    expect(title).toBe('My Page');
  });

  it.each([
    ['ATX headings', '# Heading'],
    ['strong and em', 'Some **bold**, _em_ and ~~old~~ text'],
    ['absolute links from root-relative hrefs', '[link](https://example.com/docs/a?b=1)'],
    ['absolute links from relative hrefs', '[relative one](https://example.com/section/other.html)'],
    ['javascript: links lose their href', ' and bad.'],
    ['dash bullets', '-   one\n-   two'],
    ['pre with class as a fenced block with language', '```python\nprint("hi")\nx = 1\n```'],
    ['code with language class', '```js\nconst a = 1;\n```'],
    ['GFM tables', '| A | B |\n| --- | --- |\n| 1 | 2 |'],
    ['absolute image sources', '![pic](https://example.com/section/img/p.png)'],
  ])('%s', (_name, expected) => {
    expect(markdown.replace(/ {2,}\|/g, ' |')).toContain(expected);
  });

  it.each([['alert'], ['.x{}'], ['Home'], ['Copyright'], ['Related links'], ['/empty'], ['javascript:']])('drops noise: %s', (noise) => {
    expect(markdown).not.toContain(noise);
  });

  it('a selector picks the content (all matches, in order) and keeps page chrome it selects', () => {
    const picked = htmlToMarkdown(page, { selector: 'nav, ul' });
    expect(picked.markdown).toBe('[Home](/home)\n\n-   one\n-   two');
    expect(picked.title).toBe('My Page');
  });

  it('falls back to the first <h1> for the title, and to the document without a body', () => {
    expect(htmlToMarkdown('<h1>Only <b>heading</b></h1><p>text</p>')).toEqual({ title: 'Only heading', markdown: '# Only **heading**\n\ntext' });
    expect(htmlToMarkdown('')).toEqual({ title: '', markdown: '' });
  });

  it('keeps Markdown punctuation unescaped and drops inline data: images', () => {
    const html = '<p>Call my_file_name with *args* in 2024. Version [beta]</p><p><img alt="x" src="data:image/png;base64,iVBORw0KGgo="> after</p>';
    expect(htmlToMarkdown(html).markdown).toBe('Call my_file_name with *args* in 2024. Version [beta]\n\nafter');
  });

  it('a selector that matches nothing gives empty markdown; an invalid one is a 400', () => {
    expect(htmlToMarkdown(page, { selector: '#missing' }).markdown).toBe('');
    let caught: unknown;
    try {
      htmlToMarkdown(page, { selector: 'div[' });
    } catch (error) {
      caught = error;
    }
    expect(isAppError(caught)).toBe(true);
    expect((caught as Error).message).toMatch(/selector 'div\[' is not a valid CSS selector/);
  });
});

describe('htmlToMarkdownBounded', () => {
  it('converts in a worker with a custom selector, with the same result as inline', async () => {
    expect(await htmlToMarkdownBounded(page, { selector: 'article' }, { owner: 'team' })).toEqual(htmlToMarkdown(page, { selector: 'article' }));
    expect(await htmlToMarkdownBounded(page, {}, { owner: 'team' })).toEqual(htmlToMarkdown(page));
  });

  it('an invalid selector is a 400 from the worker too', async () => {
    await expect(htmlToMarkdownBounded(page, { selector: 'div[' }, { field: 'selector', owner: 'team' })).rejects.toMatchObject({ httpStatus: 400 });
  });

  it('stops a selector that runs too long and names the field', async () => {
    const deep = `<html><body>${`${'<div>'.repeat(400)}<span>x</span>${'</div>'.repeat(400)}`.repeat(25)}</body></html>`;
    const error = await htmlToMarkdownBounded(deep, { selector: ':not(p div div div div div div div div span)' }, { field: 'selector', timeoutMs: 1500, owner: 'team' }).catch((caught: unknown) => caught);
    expect(isAppError(error)).toBe(true);
    expect((error as Error).message).toContain("'selector'");
    expect((error as Error).message).toContain('longer than 1.5 s');
  });
});

describe('htmlToMarkdown: GFM tables (each table lists its rows once)', () => {
  // Outputs recorded before the rows were listed once; the conversion must not change them.
  it.each([
  ])('%s', (table, expected) => {
    expect(htmlToMarkdown(`<body>${table}</body>`).markdown).toBe(expected);
  });

  it('a 1,000-row table: column alignment by majority, every row kept, the table left as it was', () => {
    const rows = Array.from({ length: 1000 }, (_, i) => `<tr><td>${i}</td><td${i % 3 ? ' align="right"' : ''}>v${i}</td></tr>`).join('');
    const lines = htmlToMarkdown(`<body><table><tr><th>n</th><th>v</th></tr>${rows}</table><table><tr><th>x</th></tr><tr><td>1</td></tr></table></body>`).markdown.split('\n');
    expect(lines.slice(0, 3)).toEqual(['| n   | v   |', '| --- | ---: |', '| 0   | v0  |']);
    expect(lines[1001]).toBe('| 999 | v999 |');
    expect(lines.slice(1002)).toEqual(['', '| x   |', '| --- |', '| 1   |']);
  });
});

describe('long whitespace runs', () => {
  it.each([
    ['plain spaces', `<p>a${' '.repeat(2_000)}b</p>`, true],
    ['a run split by empty tags', `<pre>${' <i></i>'.repeat(2_000)}x</pre>`, true],
    ['character references', `<pre>${'&nbsp;'.repeat(2_000)}</pre>`, true],
    ['short runs between words', `<p>${'word   '.repeat(5_000)}</p>`, false],
    ['many tags without whitespace', `<div>${'<span></span>'.repeat(5_000)}</div>`, false],
    ['a "<" that is text does not hide a run', `<pre>< ${' '.repeat(2_000)}></pre>`, true],
    ['an "&" without a reference does not hide a run', `<pre>& ${' '.repeat(2_000)};</pre>`, true],
  ])('%s', (_name, html, expected) => {
    expect(hasLongWhitespaceRun(html)).toBe(expected);
  });

  it('a small page with one is converted in the worker (turndown is quadratic on it: 80,000 spaces in a <pre> took 9 s inline)', async () => {
    const converting = htmlToMarkdownBounded(`<html><body><pre>${' '.repeat(20_000)}x  \n</pre></body></html>`, {}, { owner: 'team' });
    // The task takes its slot before the first await.
    expect(workerTaskLoad('team').running).toBe(1);
    expect((await converting).markdown).toBe(`\`\`\`\n${' '.repeat(20_000)}x\n\`\`\``);
  }, 30_000);

  it('trailing blanks are removed line by line', () => {
    const { markdown } = htmlToMarkdown(`<pre>${' '.repeat(30_000)}x\t \ny  </pre><p>z</p>`);
    expect(markdown).toBe(`\`\`\`\n${' '.repeat(30_000)}x\ny\n\`\`\`\n\nz`);
  });

  it('tidying is linear in a run of blanks without a newline (no timing asserted: quadratic, this line would outlast the test timeout by hours)', () => {
    const run = ' \t'.repeat(1_000_000);
    expect(tidyMarkdown(`a${run}b${run}\nc${run}`)).toBe(`a${run}b\nc`);
  });
});

describe('htmlToMarkdownBounded and its caller hanging up', () => {
  it('runs no worker for a caller already gone (a chat turn cut): the conversion fails at once', async () => {
    const page = `<html><body>${'<p>paragraph of a page too large to convert inline</p>'.repeat(2000)}</body></html>`;
    const controller = new AbortController();
    controller.abort();
    await expect(htmlToMarkdownBounded(page, {}, { owner: 'team-cut', signal: controller.signal })).rejects.toThrow(/was cut/);
    expect((await htmlToMarkdownBounded(page, {}, { owner: 'team-cut' })).markdown).toContain('paragraph of a page');
  });
});
