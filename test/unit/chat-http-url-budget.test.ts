import { describe, expect, it } from 'vitest';
import { MAX_INTERPOLATED_GROWTH } from '../../src/domain/workflow/interpolate.js';
import type { HttpCall } from '../../src/platform/chat/workflow-nodes/node-deps.js';
import { runHttpGet } from '../helpers/http-node-run.js';

/**
 * An HTTP node's URL template is filled in once: the growth its variables add is counted against
 * the request's text budget (MAX_INTERPOLATED_GROWTH) once, so a URL naming a large value (a
 * GET query of a big node output) runs when once fits the budget, though twice would not.
 */
describe("an HTTP node's URL naming a large variable", () => {
  it('is sent when one substitution fits the budget, though two would not', async () => {
    const big = 'a'.repeat(Math.floor(MAX_INTERPOLATED_GROWTH * 0.6));
    const calls: HttpCall[] = [];
    const result = await runHttpGet(
      'http://api.test/x?q={{big}}',
      async (call) => {
        calls.push(call);
        return { status: 200, text: '{"ok":true}' };
      },
      { big },
    );
    expect(calls).toHaveLength(1);
    expect(calls[0]!.url).toBe(`http://api.test/x?q=${big}`);
    expect(result.outputs.httpRawResponse).toEqual({ ok: true });
  });
});
