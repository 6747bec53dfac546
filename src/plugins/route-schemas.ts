import type { FastifyInstance, FastifySerializerCompiler } from 'fastify';
import fp from 'fastify-plugin';
import { validatorCompiler } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { compileResponseSerializer } from '../infra/response-serializer.js';

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
    app.setValidatorCompiler(validatorCompiler);
    app.setSerializerCompiler(compileSerializer);
  },
  { name: 'route-schemas' },
);
