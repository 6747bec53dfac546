import { describe, expect, it } from 'vitest';
import { inlineImageProblem } from '../../src/platform/chat/inline-images.js';

const b64 = (bytes: number[] | string) => Buffer.from(bytes as never).toString('base64');
const PNG_HEAD = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 0x0d];
const JPEG_HEAD = [0xff, 0xd8, 0xff, 0xe0, 0, 0x10];
const WEBP_HEAD = [0x52, 0x49, 0x46, 0x46, 1, 0, 0, 0, 0x57, 0x45, 0x42, 0x50, 0x56, 0x50];

describe('inlineImageProblem', () => {
  it.each([
    ['a web address', 'https://example.com/cat.png', undefined],
    ['an own file link', '/api/common/file/read?token=x', undefined],
    ['a PNG', `data:image/png;base64,${b64(PNG_HEAD)}`, undefined],
    ['a JPEG declared with a parameter, scheme in capitals', `DATA:image/jpeg;name=a.jpg;base64,${b64(JPEG_HEAD)}`, undefined],
    ['a WebP', `data:image/webp;base64,${b64(WEBP_HEAD)}`, undefined],
    ['text', `data:text/plain;base64,${b64('hello')}`, "must hold an image (PNG, JPEG, GIF or WebP), not 'text/plain'"],
    ['no media type', `data:;base64,${b64(PNG_HEAD)}`, "not 'text/plain'"],
    ['not base64-encoded', 'data:image/png,%89PNG', 'must be base64'],
    ['no comma', 'data:image/png;base64', 'must be base64'],
    ['base64 with a bad character', `data:image/png;base64,${b64(PNG_HEAD).slice(0, -4)}*AAA`, 'not valid base64'],
    ['base64 cut short', `data:image/png;base64,${b64(PNG_HEAD)}A`, 'not valid base64'],
    ['URL-safe base64', `data:image/jpeg;base64,_9j_4AAQ`, 'not valid base64'],
    ['empty data', 'data:image/png;base64,', 'not valid base64'],
    ['an SVG', `data:image/svg+xml;base64,${b64('<svg xmlns="http://www.w3.org/2000/svg"/>')}`, 'PNG, JPEG, GIF or WebP image (judged by its bytes)'],
    ['a PNG type over HTML', `data:image/png;base64,${b64('<html><script>x</script></html>')}`, 'judged by its bytes'],
  ])('%s', (_label, url, problem) => {
    const found = inlineImageProblem(url);
    if (problem === undefined) expect(found).toBeUndefined();
    else expect(found).toContain(problem);
  });
});
