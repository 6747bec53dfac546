import { z } from 'zod';

/** A form field; when a key is repeated the first value wins, as in the reference. */
const formField = z
  .union([z.string(), z.array(z.string())])
  .optional()
  .transform((value) => (Array.isArray(value) ? value[0] : value));

export const tokenRequestSchema = z.object({
  grant_type: formField.describe('password or refresh_token'),
  client_id: formField.describe('OAuth client name (default kubesphere)'),
  client_secret: formField.describe('OAuth client secret'),
  username: formField.describe('account name or e-mail (password grant)'),
  password: formField.describe('account password (password grant)'),
  refresh_token: formField.describe('refresh token (refresh_token grant)'),
});

export const tokenResponseSchema = z.object({
  access_token: z.string(),
  token_type: z.literal('Bearer'),
  refresh_token: z.string(),
  expires_in: z.number().int(),
});

export const logoutQuerySchema = z.object({
  post_logout_redirect_uri: formField.describe(
    'redirect here (302) instead of answering JSON: a path on this host, or a URI listed in OAUTH_LOGOUT_REDIRECT_URIS (400 otherwise)',
  ),
  state: formField,
});
