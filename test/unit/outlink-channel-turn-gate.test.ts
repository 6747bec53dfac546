import { describe, expect, it } from 'vitest';
import { channelTurnsPerLink, createChannelTurnGate } from '../../src/platform/outlinks/channels/channel-turn-gate.js';

describe('channelTurnsPerLink', () => {
  it.each([
    // [CHANNEL_TURNS_MAX, CHANNEL_TURNS_PER_LINK, share]
    [16, undefined, 4],
    [8, undefined, 2],
    [7, undefined, 1],
    [3, undefined, 1],
    [1, undefined, 1],
    [16, 10, 10],
    [4, 9, 4],
  ])('max %s, configured %s: %s', (max, configured, share) => {
    expect(channelTurnsPerLink(max, configured)).toBe(share);
  });
});

describe('the channel turn gate', () => {
  it('lets one link in up to its share, others up to the process bound, and counts releases once', () => {
    const gate = createChannelTurnGate(3, 2);
    const a1 = gate.tryEnter('a');
    const a2 = gate.tryEnter('a');
    expect(a1 && a2).toBeTruthy();
    expect(gate.tryEnter('a')).toBeNull();
    expect(gate.fullLinks()).toEqual(['a']);
    expect(gate.linkHasRoom('b')).toBe(true);
    const b1 = gate.tryEnter('b');
    expect(b1).toBeTruthy();
    // The process is full: even a link with room of its share waits.
    expect(gate.tryEnter('c')).toBeNull();
    expect(gate.tryEnter(undefined)).toBeNull();
    expect(gate.room()).toBe(0);
    expect(gate.busyLinks().sort()).toEqual(['a', 'b']);

    a1?.();
    a1?.();
    expect(gate.room()).toBe(1);
    expect(gate.fullLinks()).toEqual([]);
    expect(gate.linkHasRoom('a')).toBe(true);
    b1?.();
    expect(gate.busyLinks()).toEqual(['a']);
    // A job without a message is bounded by the process only.
    const none = gate.tryEnter(undefined);
    expect(none).toBeTruthy();
    expect(gate.busyLinks()).toEqual(['a']);
  });
});
