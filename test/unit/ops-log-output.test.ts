import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
// @ts-expect-error plain JavaScript module of the scripts
import { logOutput } from '../../scripts/log-output.mjs';

/** A stream that says whether it is a terminal, and keeps what it was given. */
function sink(isTTY: boolean) {
  let text = '';
  const stream = Object.assign(
    new Writable({
      write(chunk, _encoding, callback) {
        text += chunk.toString();
        callback();
      },
    }),
    { isTTY, hasColors: () => false },
  );
  return { stream, text: () => text };
}

const line = JSON.stringify({ level: 30, time: '2026-01-01T10:00:00.000Z', service: 'platform-service', msg: 'listening on http://0.0.0.0:3000' });

describe('npm run up log output', () => {
  it('is readable on a terminal, even when a line arrives in pieces', async () => {
    const terminal = sink(true);
    const output = logOutput(terminal.stream);
    output.write(line.slice(0, 20));
    output.write(`${line.slice(20)}\n`);
    for (let waited = 0; !terminal.text() && waited < 2000; waited += 20) await new Promise((resolve) => setTimeout(resolve, 20));
    expect(terminal.text()).toMatch(/^\[\d{2}:\d{2}:\d{2}\.\d{3}\] INFO: listening on http:\/\/0\.0\.0\.0:3000\n$/);
  });

  it('stays JSON lines when redirected', () => {
    const file = sink(false);
    expect(logOutput(file.stream)).toBe(file.stream);
  });
});
