import { describe, expect, it } from 'vitest';
import { splitAuthorization } from '../../src/cluster/auth/authenticate.js';

describe('splitAuthorization', () => {
  // The header's first two space-separated words, exactly as `split(' ')` reads them.
  it.each(['Bearer abc.def', 'Bearer', 'Bearer ', 'Bearer  abc', 'Basic dXNlcjpwdw== extra', ' Bearer abc', 'bearer abc ', '', 'Token a b c'])('%j reads as split would', (header) => {
    const [scheme = '', credentials = ''] = header.split(' ');
    expect(splitAuthorization(header)).toEqual({ scheme, credentials });
  });
});
