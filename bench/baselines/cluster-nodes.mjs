// The nodes list reduced to its database work: count the stored nodes, read one page of their
// stored JSON, answer the parsed page.
export default function register(app, { db }) {
  const nodes = db.collection('cluster_nodes');
  app.get('/nodes', async (request) => {
    const limit = Number(request.query.limit);
    const skip = (Number(request.query.page) - 1) * limit;
    const totalItems = await nodes.countDocuments({});
    const page = await nodes.find({}, { projection: { json: 1 } }).sort({ _id: -1 }).skip(skip).limit(limit).toArray();
    return { items: page.map((node) => JSON.parse(node.json)), totalItems };
  });
}
