import net from 'node:net';

/**
 * A TCP proxy in front of the test database, to play what the database does to its clients:
 * `refuse` closes every connection gracefully (a FIN, as a restart or failover does) and refuses
 * new ones; `reopen` accepts them again on the same port.
 */
export interface TcpProxy {
  port: number;
  refuse(): Promise<void>;
  reopen(): Promise<void>;
  close(): Promise<void>;
}

export async function startTcpProxy(targetHost: string, targetPort: number): Promise<TcpProxy> {
  const sockets = new Set<net.Socket>();
  const track = (socket: net.Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => undefined);
  };
  let server = net.createServer();
  const serve = (port: number) =>
    new Promise<number>((resolve, reject) => {
      server = net.createServer((client) => {
        const upstream = net.connect(targetPort, targetHost);
        track(client);
        track(upstream);
        client.pipe(upstream);
        upstream.pipe(client);
      });
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => resolve((server.address() as net.AddressInfo).port));
    });
  const stop = () =>
    new Promise<void>((resolve) => {
      for (const socket of sockets) socket.end();
      server.close(() => resolve());
    });
  const port = await serve(0);
  return {
    port,
    refuse: stop,
    reopen: async () => {
      await serve(port);
    },
    close: async () => {
      await stop();
      for (const socket of sockets) socket.destroy();
    },
  };
}

/** `uri` (a mongodb:// URI) sent through the proxy listening on `port`. */
export function viaProxy(uri: string, port: number): string {
  const url = new URL(uri.replace(/^mongodb:/, 'http:'));
  url.hostname = '127.0.0.1';
  url.port = String(port);
  return url.toString().replace(/^http:/, 'mongodb:');
}
