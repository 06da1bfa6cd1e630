/**
 * The standalone dashboard's web server (`padlock dashboard`): a `node:http` server of one
 * {@link Dashboard}, on loopback by default.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Dashboard } from './handler.js';

/** A listening dashboard server. */
export interface DashboardServer {
  /** Where it listens: `http://127.0.0.1:8080/`. */
  readonly url: string;
  /** Stops listening, ends the pages' streams and closes their connections. */
  close(): Promise<void>;
}

/**
 * Serves `dashboard` on `host`:`port` (0: a free port).
 * @throws the listen error (EADDRINUSE, EACCES, …)
 */
export async function serveDashboard(dashboard: Dashboard, host: string, port: number): Promise<DashboardServer> {
  const server: Server = createServer((req, res) => dashboard(req, res));
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const shownHost = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return {
    url: `http://${shownHost}:${address.port}/`,
    close: async () => {
      await dashboard.close();
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      await closed;
    },
  };
}
