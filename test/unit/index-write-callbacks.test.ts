/**
 * An index write's callback must write and log through the checked context it is handed
 * (search/index-writes.ts): a callback that ignores its first parameter reaches the caller's
 * unchecked repositories through its closure, and a writer that lost its lock would go on writing.
 * Types cannot forbid that capture, so every call in src/ is read here: its callback's first
 * parameter must be named `ctx`, shadowing the caller's.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const SRC = join(import.meta.dirname, '../../src');

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

/** Each call of `name` in the file: where it is, and the first parameter of its last argument (null when that is no function literal). */
function callsOf(file: string, name: string): { at: string; parameter: string | null }[] {
  const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
  const calls: { at: string; parameter: string | null }[] = [];
  const visit = (node: ts.Node) => {
    if (ts.isCallExpression(node) && ts.isIdentifier(node.expression) && node.expression.text === name) {
      const callback = node.arguments.at(-1);
      const first = callback && (ts.isArrowFunction(callback) || ts.isFunctionExpression(callback)) ? callback.parameters[0] : undefined;
      const line = source.getLineAndCharacterOfPosition(node.getStart()).line + 1;
      calls.push({ at: `${relative(SRC, file)}:${line}`, parameter: first ? first.name.getText(source) : null });
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return calls;
}

describe('index write callbacks', () => {
  const calls = sourceFiles(SRC).flatMap((file) => callsOf(file, 'withIndexWrite'));

  it('are found (the scan reads the calls at all)', () => {
    expect(calls.length).toBeGreaterThanOrEqual(5);
  });

  it('each take the checked context as `ctx`', () => {
    expect(calls.filter((call) => call.parameter !== 'ctx')).toEqual([]);
  });

  it('are told apart from a callback that ignores its context', () => {
    const file = join(import.meta.dirname, '../fixtures/index-write-callback-ignoring-ctx.ts.txt');
    expect(callsOf(file, 'withIndexWrite').map((call) => call.parameter)).toEqual([null, 'locked', 'ctx']);
  });
});
