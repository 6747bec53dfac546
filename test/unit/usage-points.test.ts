import { describe, expect, it } from 'vitest';
import { tokenTotals, usagePoints } from '../../src/domain/usage-points.js';

describe('usagePoints', () => {
  it('prices per 1000 tokens or characters, or per 60 seconds; no price is free', () => {
    expect(usagePoints({ charsPointsPrice: 2 }, 1500)).toBe(3);
    expect(usagePoints({ charsPointsPrice: 6 }, 90, 60)).toBe(9);
    expect(usagePoints({}, 1000)).toBe(0);
    expect(usagePoints(undefined, 1000)).toBe(0);
  });
});

describe('tokenTotals', () => {
  it('adds prompt and answer tokens of model calls; a line without the split (an embedding) is all input', () => {
    const lines = [
      { moduleName: 'AI chat', totalPoints: 1, tokens: 15, inputTokens: 10, outputTokens: 5 },
      { moduleName: 'Dataset search', totalPoints: 0.1, tokens: 3 },
      // A child app's line carries its calls' sums, and no total of its own.
      { moduleName: 'Child app', totalPoints: 2, inputTokens: 7, outputTokens: 4 },
      { moduleName: 'HTTP request', totalPoints: 0 },
    ];
    expect(tokenTotals(lines)).toEqual({ inputTokens: 20, outputTokens: 9 });
    expect(tokenTotals([])).toEqual({ inputTokens: 0, outputTokens: 0 });
  });
});
