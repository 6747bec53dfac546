import { describe, expect, it } from 'vitest';
import { bumpAfterWrite } from '../../src/infra/version-stamps.js';

describe('bumpAfterWrite', () => {
  const counter = () => {
    const state = { bumps: 0 };
    return { state, bump: async () => void state.bumps++ };
  };

  it('bumps after a write that changed something, and answers its result', async () => {
    const { state, bump } = counter();
    expect(await bumpAfterWrite(async () => 3, bump, (n) => n > 0)).toBe(3);
    expect(state.bumps).toBe(1);
  });

  it('does not bump after a write that changed nothing', async () => {
    const { state, bump } = counter();
    expect(await bumpAfterWrite(async () => 0, bump, (n) => n > 0)).toBe(0);
    expect(state.bumps).toBe(0);
  });

  it('bumps by default when no test of the result is given', async () => {
    const { state, bump } = counter();
    await bumpAfterWrite(async () => undefined, bump);
    expect(state.bumps).toBe(1);
  });

  it('bumps after a failed write and throws the write error, even when the bump fails too', async () => {
    const { state, bump } = counter();
    await expect(bumpAfterWrite(async () => Promise.reject(new Error('write lost')), bump)).rejects.toThrow('write lost');
    expect(state.bumps).toBe(1);
    const failingBump = async () => Promise.reject(new Error('bump failed'));
    await expect(bumpAfterWrite(async () => Promise.reject(new Error('write lost')), failingBump)).rejects.toThrow('write lost');
  });
});
