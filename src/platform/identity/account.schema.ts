import { z } from 'zod';
import { zName } from '../../infra/zod.js';

const password = z.string().min(1, 'is required').max(200, 'must be at most 200 characters');

export const loginSchema = z.object({
  username: z.string().trim().min(1, 'is required').max(100, 'must be at most 100 characters'),
  password,
});

function isTimeZone(value: string): boolean {
  try {
    new Intl.DateTimeFormat('en', { timeZone: value });
    return true;
  } catch {
    return false;
  }
}

const avatar = z.string().trim().min(1, 'must not be empty').max(2000, 'must be at most 2000 characters');

/** Only these fields may change; anything else (username, password, status...) is refused. */
export const accountUpdateSchema = z.strictObject({
  avatar: avatar.optional(),
  timezone: z.string().trim().max(100).refine(isTimeZone, 'must be an IANA time zone such as Europe/Paris').optional(),
  openaiAccount: z
    .strictObject({
      key: z.string().trim().max(500),
      baseUrl: z.union([z.url({ protocol: /^https?$/ }), z.literal('')]).optional(),
    })
    .nullable()
    .optional(),
});

export const passwordChangeSchema = z.object({
  oldPsw: password,
  newPsw: z.string().min(6, 'must be at least 6 characters').max(200, 'must be at most 200 characters'),
});

export const teamUpdateSchema = z.strictObject({
  name: zName.optional(),
  avatar: avatar.optional(),
  teamDomain: z.string().trim().max(200).optional(),
  lafAccount: z.strictObject({ token: z.string().max(2000).optional(), appid: z.string().max(200).optional(), pat: z.string().max(2000).optional() }).nullable().optional(),
});
