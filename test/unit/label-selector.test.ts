import { describe, expect, it } from 'vitest';
import { matchesSelector, parseSelector, type Requirement } from '../../src/domain/label-selector.js';

const parsed = (text: string) => {
  const result = parseSelector(text);
  if (!result.ok) throw new Error(result.error);
  return result.requirements;
};

describe('parseSelector: valid selectors', () => {
  it.each<[string, Requirement[]]>([
    ['', []],
    ['   ', []],
    ['a=b', [{ key: 'a', operator: 'in', values: ['b'] }]],
    ['a==b', [{ key: 'a', operator: 'in', values: ['b'] }]],
    ['a = b', [{ key: 'a', operator: 'in', values: ['b'] }]],
    ['a!=b', [{ key: 'a', operator: 'notin', values: ['b'] }]],
    ['a=', [{ key: 'a', operator: 'in', values: [''] }]],
    ['a', [{ key: 'a', operator: 'exists', values: [] }]],
    ['!a', [{ key: 'a', operator: 'notexists', values: [] }]],
    [' ! a ', [{ key: 'a', operator: 'notexists', values: [] }]],
    ['a in (x,y)', [{ key: 'a', operator: 'in', values: ['x', 'y'] }]],
    ['a in ( x , y , x )', [{ key: 'a', operator: 'in', values: ['x', 'y'] }]],
    ['a notin (x)', [{ key: 'a', operator: 'notin', values: ['x'] }]],
    ['a in ()', [{ key: 'a', operator: 'in', values: [''] }]],
    ['a>1', [{ key: 'a', operator: 'gt', values: ['1'] }]],
    ['a < 3', [{ key: 'a', operator: 'lt', values: ['3'] }]],
    [
      'node-role.kubernetes.io/master,!node-role.kubernetes.io/edge,env in (prod,qa),tier!=1',
      [
        { key: 'node-role.kubernetes.io/master', operator: 'exists', values: [] },
        { key: 'node-role.kubernetes.io/edge', operator: 'notexists', values: [] },
        { key: 'env', operator: 'in', values: ['prod', 'qa'] },
        { key: 'tier', operator: 'notin', values: ['1'] },
      ],
    ],
    ['a=in', [{ key: 'a', operator: 'in', values: ['in'] }]],
    // Where a key is read the reference's parser reads `in`/`notin` as identifiers (Values context).
    ['in', [{ key: 'in', operator: 'exists', values: [] }]],
    ['!in', [{ key: 'in', operator: 'notexists', values: [] }]],
    ['notin=x', [{ key: 'notin', operator: 'in', values: ['x'] }]],
    ['in=notin', [{ key: 'in', operator: 'in', values: ['notin'] }]],
    ['in in (in)', [{ key: 'in', operator: 'in', values: ['in'] }]],
    ['a,notin notin (x)', [{ key: 'a', operator: 'exists', values: [] }, { key: 'notin', operator: 'notin', values: ['x'] }]],
  ])('%j', (text, expected) => {
    expect(parsed(text)).toEqual(expected);
  });
});

describe('parseSelector: invalid selectors', () => {
  it.each([
    '=b',
    'a in (x',
    'a in x',
    'a notin',
    'a b',
    'a=b c',
    '!a=b',
    'a,',
    ',a',
    'a>x',
    'a<',
    'a=b=c',
    'Bad Key=1',
    '-a=b',
    'a=-b',
    `a=${'x'.repeat(64)}`,
    `${'k'.repeat(64)}=v`,
    'UPPER.example/key=v',
    '/key=v',
    'a=(b)',
    // In operator position they stay keywords.
    'a in in',
    'in notin',
    // A `>`/`<` bound is validated as a label value too, which cannot start with '-'.
    'tier>-1',
    'tier<-5',
    'a>1,b<-2',
  ])('%j', (text) => {
    const result = parseSelector(text);
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.error.length).toBeGreaterThan(0);
  });
});

describe('matchesSelector', () => {
  const labels = { app: 'web', env: 'prod', tier: '3', 'node-role.kubernetes.io/worker': '' };
  it.each<[string, boolean]>([
    ['', true],
    ['app=web', true],
    ['app==web', true],
    ['app=db', false],
    ['app!=db', true],
    ['app!=web', false],
    ['missing!=x', true],
    ['app in (db,web)', true],
    ['app in (db)', false],
    ['missing in (x)', false],
    ['app notin (db)', true],
    ['app notin (web)', false],
    ['missing notin (x)', true],
    ['app', true],
    ['missing', false],
    ['!missing', true],
    ['!app', false],
    ['node-role.kubernetes.io/worker', true],
    ['node-role.kubernetes.io/worker=', true],
    ['node-role.kubernetes.io/worker in ()', true],
    ['tier>2', true],
    ['tier>3', false],
    ['tier<4', true],
    ['app>1', false],
    ['missing<1', false],
    ['app=web,env=prod', true],
    ['app=web,env=dev', false],
  ])('%j → %s', (text, expected) => {
    expect(matchesSelector(parsed(text), labels)).toBe(expected);
  });
});
