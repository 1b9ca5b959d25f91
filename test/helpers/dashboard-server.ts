import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

import { createDashboard, type DashboardOptions } from '../../src/dashboard/http.js';

/** A dashboard served on a loopback port of its own (what `serve --dashboard` mounts beside `/mcp`), in-process. */
export interface ServedDashboard {
  /** `http://127.0.0.1:<port>` */
  base: string;
  /** `127.0.0.1:<port>` (the Host header the page is reached by). */
  host: string;
  close(): Promise<void>;
}

/** Serve `createDashboard(options)` on 127.0.0.1 (a random port) until {@link ServedDashboard.close}. */
export async function serveDashboard(options: DashboardOptions): Promise<ServedDashboard> {
  const dashboard = createDashboard(options);
  const http = createServer((request, response) => void dashboard.handle(request, response));
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  const host = `127.0.0.1:${(http.address() as AddressInfo).port}`;
  return {
    base: `http://${host}`,
    host,
    async close() {
      dashboard.close();
      http.closeAllConnections();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
}
