import { describe, expect, it } from 'vitest';
import { expired, usedUp } from '../../src/domain/credential-limits.js';

describe('usedUp', () => {
  it.each([
    [-1, 1e9, false],
    [undefined, 1e9, false],
    [null, 1e9, false],
    [10, 9, false],
    [10, 10, true],
    [10, 11, true],
    // A limit of 0 allows nothing (the reference's form treats 0 as a limit, not as "none").
    [0, 0, true],
    [0.5, 0.49, false],
    [0.5, 0.5, true],
  ])('a limit of %j with %j points used: %s', (max, used, expected) => {
    expect(usedUp(max, used)).toBe(expected);
  });
});

describe('expired', () => {
  const now = Date.parse('2026-12-01T10:00:00.000Z');
  it.each([
    [undefined, false],
    [null, false],
    [new Date(now + 1), false],
    // The expiry is the first instant the credential is refused.
    [new Date(now), true],
    [new Date(now - 1), true],
    ['2026-12-01T10:00:00.000Z', true],
    ['2026-12-01T10:00:00.001Z', false],
    [now, true],
    ['not a date', false],
  ])('expiring at %j is refused at 10:00:00.000: %s', (at, expected) => {
    expect(expired(at, now)).toBe(expected);
  });
});
