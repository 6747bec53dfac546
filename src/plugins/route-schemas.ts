import type { FastifyInstance, FastifySchemaCompiler, FastifySerializerCompiler } from 'fastify';
import fp from 'fastify-plugin';
import { validatorCompiler } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { safeParseNullAsAbsent } from '../infra/null-as-absent.js';
import { compileResponseSerializer } from '../infra/response-serializer.js';

/** zod validation, where an optional field sent as null reads as absent (infra/null-as-absent.ts). */
const compileValidator: FastifySchemaCompiler<z.ZodType> = (route) => {
  // The library's validator answers `{ value }` or `{ error }` synchronously.
  const validate = validatorCompiler(route) as (data: unknown) => { value?: unknown; error?: Error };
  return (data) => {
    const result = safeParseNullAsAbsent(route.schema, data);
    // A refusal in the library's error shape, which the error handler reads.
    return result.success ? { value: result.data } : validate(data);
  };
};

const compileSerializer: FastifySerializerCompiler<unknown> = ({ schema, method, url }) => {
  if (!(schema instanceof z.ZodType)) throw new Error(`${method} ${url}: response schemas are zod schemas`);
  return compileResponseSerializer(schema);
};

/**
 * Route schemas are zod schemas, for both APIs: Fastify validates each declared request part
 * with zod before the handler runs (a failure reaches the error handler as a validation error),
 * and compiles each declared response schema into a fast-json-stringify writer.
 */
export default fp(
  async function routeSchemasPlugin(app: FastifyInstance) {
    app.setValidatorCompiler(compileValidator);
    app.setSerializerCompiler(compileSerializer);
  },
  { name: 'route-schemas' },
);
