// GET /readyz reduced to its work: one ping of the database.
export default function register(app, { db }) {
  app.get('/ping', async () => {
    await db.command({ ping: 1 });
    return { status: 'ok' };
  });
}
