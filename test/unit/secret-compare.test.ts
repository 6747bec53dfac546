import { describe, expect, it } from 'vitest';
import { sameSecret } from '../../src/infra/secret-compare.js';

describe('sameSecret', () => {
  it.each([
    ['equal', 'kubesphere', 'kubesphere', true],
    ['both empty', '', '', true],
    ['one character off', 'kubesphere', 'kubespherf', false],
    ['a prefix', 'kube', 'kubesphere', false],
    ['longer', 'kubesphere!', 'kubesphere', false],
    ['empty against a secret', '', 'kubesphere', false],
    ['same text, other normal form', 'caf\u00e9', 'cafe\u0301', false],
  ])('%s', (_name, given, expected, same) => {
    expect(sameSecret(given, expected)).toBe(same);
  });
});
