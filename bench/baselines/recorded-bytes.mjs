// The limit: each route answers the bytes our server answered there, from memory.
// options.routes: [{ path ('/*' for any), contentType, base64, headers? }] — with `headers`, the
// response headers our server sent too (date, length and connection headers are Node's own).
export default function register(app, { options }) {
  for (const { path, contentType, base64, headers = {} } of options.routes) {
    const bytes = Buffer.from(base64, 'base64');
    app.route({ method: ['GET', 'POST'], url: path, handler: async (_request, reply) => reply.headers(headers).type(contentType).send(bytes) });
  }
}
