import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { generateOpenApi } from '../../scripts/openapi.js';

describe('openapi/openapi.json', () => {
  it('matches the routes (run `npm run openapi` after changing a route)', async () => {
    const committed = readFileSync('openapi/openapi.json', 'utf8');
    expect(committed).toBe(await generateOpenApi());
  });
});
