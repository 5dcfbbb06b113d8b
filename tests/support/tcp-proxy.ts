import net from 'node:net';

/**
 * A TCP proxy in front of PostgreSQL that a test can cut: every open connection is dropped and new
 * ones are refused (the database is gone for this client only) until `restore()`. After pg-boss's
 * test/halfOpenProxy.ts. `swallowAnswers()` is a partition seen from the client: what it sends
 * still reaches the server, what the server answers is dropped, nothing is closed.
 */
export interface CuttableProxy {
  url(databaseUrl: string): string;
  cut(): void;
  restore(): void;
  /** From now until restore(), the server's bytes are dropped on every open connection. */
  swallowAnswers(): void;
  close(): Promise<void>;
}

export async function startProxy(target: { host: string; port: number }): Promise<CuttableProxy> {
  const sockets = new Set<net.Socket>();
  let cut = false;
  let swallowing = false;
  const server = net.createServer((client) => {
    if (cut) return client.destroy();
    const upstream = net.connect(target.port, target.host);
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on('error', () => undefined);
      socket.on('close', () => {
        sockets.delete(socket);
        client.destroy();
        upstream.destroy();
      });
    }
    client.pipe(upstream);
    upstream.on('data', (chunk: Buffer) => {
      if (!swallowing) client.write(chunk);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  const cutAll = () => {
    cut = true;
    for (const socket of sockets) socket.destroy();
  };
  return {
    url(databaseUrl) {
      const parsed = new URL(databaseUrl);
      parsed.hostname = '127.0.0.1';
      parsed.port = String(port);
      return parsed.toString();
    },
    cut: cutAll,
    restore() {
      cut = false;
      swallowing = false;
    },
    swallowAnswers() {
      swallowing = true;
    },
    async close() {
      cutAll();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
