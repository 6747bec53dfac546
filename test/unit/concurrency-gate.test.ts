import { describe, expect, it } from 'vitest';
import { createConcurrencyGate } from '../../src/infra/concurrency-gate.js';

describe('concurrency gate', () => {
  it('admits up to its limit, refuses the next at once, and takes each release once', () => {
    const gate = createConcurrencyGate(2);
    const first = gate.tryEnter();
    const second = gate.tryEnter();
    expect(first).toBeTypeOf('function');
    expect(second).toBeTypeOf('function');
    expect(gate.tryEnter()).toBeNull();
    expect(gate.held).toBe(2);
    first?.();
    first?.();
    expect(gate.held).toBe(1);
    const third = gate.tryEnter();
    expect(third).toBeTypeOf('function');
    expect(gate.tryEnter()).toBeNull();
    second?.();
    third?.();
    expect(gate.held).toBe(0);
  });
});
