// core/app/list reduced to its database work: the team's apps (in one folder, or all) and the
// member's permission rows, read together; the answer built from them.
// options: { teamId, tmbId }
import { ObjectId } from 'mongodb';

const projection = { _id: 1, parentId: 1, avatar: 1, type: 1, name: 1, intro: 1, tmbId: 1, teamId: 1, updateTime: 1, pluginData: 1, defaultPermission: 1, inheritPermission: 1 };

export default function register(app, { db, options }) {
  const teamId = new ObjectId(options.teamId);
  const tmbId = new ObjectId(options.tmbId);
  app.setErrorHandler((error, _request, reply) => {
    console.error('baseline error', error.message);
    reply.status(500).send({ message: error.message });
  });
  app.post('/list', async (request) => {
    const filter = { teamId };
    if (request.body?.parentId) filter.parentId = new ObjectId(request.body.parentId);
    const [docs, rows] = await Promise.all([
      db.collection('apps').find(filter, { projection, sort: { updateTime: -1, _id: -1 }, limit: 1000 }).toArray(),
      db.collection('resource_permissions').find({ resourceType: 'app', teamId, tmbId }).toArray(),
    ]);
    return { code: 200, statusText: '', message: '', data: docs.map((d) => ({ ...d, permission: rows.length })) };
  });
}
