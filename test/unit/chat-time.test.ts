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
});
