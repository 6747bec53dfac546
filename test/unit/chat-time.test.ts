import { describe, expect, it } from 'vitest';
import { formatChatTime } from '../../src/platform/chat/chat-time.js';

describe('formatChatTime', () => {
  it('writes the UTC date, time and English weekday as the reference does', () => {
    expect(formatChatTime(new Date('2024-03-10T23:59:58.999Z'))).toBe('2024-03-10 23:59:58 Sunday');
    expect(formatChatTime(new Date('2024-03-11T00:00:00Z'))).toBe('2024-03-11 00:00:00 Monday');
  });

  it('names every day of a week as Intl does in UTC', () => {
    const intl = new Intl.DateTimeFormat('en-US', { weekday: 'long', timeZone: 'UTC' });
    for (let day = 0; day < 7; day++) {
      const date = new Date(Date.UTC(2026, 10, 23 + day, 12));
      expect(formatChatTime(date).split(' ')[2]).toBe(intl.format(date));
    }
  });

  it('answers from its one-second memo only for the same second, whatever the order of calls', () => {
    expect(formatChatTime(new Date('2024-03-10T10:00:00.100Z'))).toBe('2024-03-10 10:00:00 Sunday');
    expect(formatChatTime(new Date('2024-03-10T10:00:00.900Z'))).toBe('2024-03-10 10:00:00 Sunday');
    expect(formatChatTime(new Date('2024-03-10T10:00:01.000Z'))).toBe('2024-03-10 10:00:01 Sunday');
    expect(formatChatTime(new Date('2023-01-01T00:00:00.000Z'))).toBe('2023-01-01 00:00:00 Sunday');
    expect(formatChatTime(new Date('1969-12-31T23:59:59.500Z'))).toBe('1969-12-31 23:59:59 Wednesday');
    expect(formatChatTime(new Date('2024-03-10T10:00:01.999Z'))).toBe('2024-03-10 10:00:01 Sunday');
  });

  it("writes the time in the user's zone, and UTC for a zone it does not know", () => {
    const date = new Date('2024-03-10T23:59:58.999Z');
    expect(formatChatTime(date, 'Asia/Shanghai')).toBe('2024-03-11 07:59:58 Monday');
    expect(formatChatTime(date, 'America/New_York')).toBe('2024-03-10 19:59:58 Sunday');
    expect(formatChatTime(new Date('2024-03-10T16:00:00Z'), 'Asia/Shanghai')).toBe('2024-03-11 00:00:00 Monday');
    expect(formatChatTime(date, 'Mars/Olympus_Mons')).toBe('2024-03-10 23:59:58 Sunday');
    // The memo is per zone: the same second in another zone is formatted for that zone.
    expect(formatChatTime(date)).toBe('2024-03-10 23:59:58 Sunday');
    expect(formatChatTime(date, 'Asia/Shanghai')).toBe('2024-03-11 07:59:58 Monday');
  });
});
