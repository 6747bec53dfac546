import { describe, expect, it } from 'vitest';
import { usagePoints } from '../../src/domain/usage-points.js';

describe('usagePoints', () => {
  it('prices per 1000 tokens or characters, or per 60 seconds; no price is free', () => {
    expect(usagePoints({ charsPointsPrice: 2 }, 1500)).toBe(3);
    expect(usagePoints({ charsPointsPrice: 6 }, 90, 60)).toBe(9);
    expect(usagePoints({}, 1000)).toBe(0);
    expect(usagePoints(undefined, 1000)).toBe(0);
  });
});
