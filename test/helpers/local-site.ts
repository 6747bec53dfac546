import { createServer, type RequestListener } from 'node:http';
import type { AddressInfo } from 'node:net';

/** A web site on loopback for link imports and previews (tests allow private addresses for it). */
export interface LocalSite {
  /** `http://127.0.0.1:<port>`, no trailing slash. */
  url: string;
  /** Stops it, dropping kept-alive connections (the service's agent keeps them open). */
  close(): Promise<void>;
}

export async function startLocalSite(handler: RequestListener): Promise<LocalSite> {
  const server = createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    async close() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
