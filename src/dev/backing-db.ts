// Where the local Neon endpoint's SQL really runs: a Postgres server (one pg Pool per database
// name), or an embedded PGlite exposed over TCP.
import { connect, createServer, type Socket } from "node:net";
import type { PGlite } from "@electric-sql/pglite";
import { PGLiteSocketServer } from "@electric-sql/pglite-socket";
import pg from "pg";

export interface Backend {
  /** A postgres:// URL for clients (for PGlite, the turn-taking TCP front below). */
  connectionString: string;
  /** Where WebSocket relays to the database really connect. */
  target: { host: string; port: number };
  /** Pool for the database named in a request; undefined means the default one. */
  poolFor(database: string | undefined): pg.Pool;
  close(): Promise<void>;
}

// Every value stays Postgres text output; Neon's client parses by dataTypeID itself.
const rawText = { getTypeParser: () => (value: string) => value } as unknown as pg.CustomTypesConfig;

export function pgBackend(connectionString: string, idleTimeoutMs = 5_000): Backend {
  const base = new URL(connectionString);
  const pools = new Map<string, pg.Pool>();
  return {
    connectionString,
    target: { host: base.hostname, port: Number(base.port || 5432) },
    poolFor(database) {
      const key = database ?? "";
      let pool = pools.get(key);
      if (!pool) {
        const url = new URL(base);
        if (database) url.pathname = `/${encodeURIComponent(database)}`;
        pool = new pg.Pool({
          connectionString: url.toString(),
          types: rawText,
          max: 10,
          idleTimeoutMillis: idleTimeoutMs,
          allowExitOnIdle: true,
        });
        // An idle session killed from outside (DROP DATABASE ... WITH (FORCE)) is replaced on next use.
        pool.on("error", () => {});
        pools.set(key, pool);
      }
      return pool;
    },
    async close() {
      await Promise.all([...pools.values()].map((pool) => pool.end()));
      pools.clear();
    },
  };
}

/**
 * PGlite is ONE Postgres session. pglite-socket accepts several connections but feeds their
 * protocol messages to that session one by one, keeping only explicit transactions together,
 * so two clients' extended-protocol messages interleave and break each other (seen as
 * `portal "" does not exist`). We therefore put a small TCP front before it that gives one
 * connection at a time a turn: from its first message until the server is idle again
 * (ReadyForQuery 'I' with nothing outstanding), so a transaction keeps the turn to its end.
 * Everything (HTTP pool, WebSocket relay, `connectionString` users) goes through the front.
 * Consequences: statements run one at a time; all connections share session state (SET,
 * temp tables); and a connection idling inside a transaction stalls all the others.
 */
export async function pgliteBackend(db: PGlite): Promise<Backend> {
  const pglite = new PGLiteSocketServer({ db, host: "127.0.0.1", port: 0, maxConnections: 64 });
  await pglite.start();
  const [, upstreamPort] = pglite.getServerConn().split(":");
  const turns = new Turns();
  const sockets = new Set<Socket>();
  const front = createServer((client) => {
    const upstream = connect(Number(upstreamPort), "127.0.0.1");
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.setNoDelay(true);
      s.on("close", () => {
        sockets.delete(s);
        client.destroy();
        upstream.destroy();
        turns.release(client);
      });
      s.on("error", () => {}); // 'close' follows and tears both down
    }
    const fromClient = new Framer(1); // the startup message has no type byte
    const fromServer = new Framer(0);
    let outstanding = 0; // requests still awaiting ReadyForQuery
    let chain = Promise.resolve();
    client.on("data", (chunk) => {
      chain = chain.then(async () => {
        await turns.acquire(client);
        fromClient.push(chunk, (type, peek) => {
          const code = type === 0 && peek.length >= 4 ? peek.readInt32BE(0) : 0;
          if (code === 80877103 || code === 80877104) {
            fromClient.untyped++; // SSL/GSS request: answered 'N', then the real startup
            fromServer.raw++;
          } else if (code === 196608 || type === 0x51 || type === 0x53 || type === 0x46) {
            outstanding++; // startup, Query, Sync and FunctionCall each end in ReadyForQuery
          }
        });
        upstream.write(chunk);
      });
    });
    upstream.on("data", (chunk) => {
      let idle = false;
      fromServer.push(chunk, (type, peek) => {
        if (type !== 0x5a) return; // 'Z' ReadyForQuery
        outstanding--;
        idle = outstanding <= 0 && peek[0] === 0x49; // 'I': not in a transaction
      });
      client.write(chunk);
      if (idle) turns.release(client);
    });
  });
  await new Promise<void>((resolve) => front.listen(0, "127.0.0.1", resolve));
  const port = (front.address() as { port: number }).port;
  const connectionString = `postgres://postgres@127.0.0.1:${port}/postgres`; // names are ignored
  // HTTP requests share one session anyway; one client keeps them in order.
  const pool = new pg.Pool({ connectionString, types: rawText, max: 1, allowExitOnIdle: true });
  pool.on("error", () => {});
  return {
    connectionString,
    target: { host: "127.0.0.1", port },
    poolFor: () => pool,
    async close() {
      await pool.end();
      for (const s of sockets) s.destroy();
      await new Promise((resolve) => front.close(resolve));
      await pglite.stop();
    },
  };
}

/** Whose turn it is with the single PGlite session; others wait in arrival order. */
class Turns {
  private holder: object | undefined;
  private queue: Array<{ who: object; go: () => void }> = [];

  acquire(who: object): Promise<void> {
    if (this.holder === undefined) this.holder = who;
    if (this.holder === who) return Promise.resolve();
    return new Promise((go) => this.queue.push({ who, go }));
  }

  release(who: object): void {
    this.queue = this.queue.filter((w) => w.who !== who);
    if (this.holder !== who) return;
    const next = this.queue.shift();
    this.holder = next?.who;
    next?.go();
  }
}

/**
 * Finds Postgres protocol message boundaries in a byte stream without buffering bodies:
 * reports each message's type (0 for the untyped startup-style ones) and up to 4 body bytes.
 */
class Framer {
  private head: Buffer = Buffer.alloc(0);
  private skip = 0;

  /** `untyped`: leading messages without a type byte; `raw`: single unframed bytes (SSL 'N'). */
  constructor(public untyped: number, public raw = 0) {}

  push(chunk: Buffer, onMessage: (type: number, peek: Buffer) => void): void {
    let i = 0;
    while (i < chunk.length) {
      if (this.skip > 0) {
        const n = Math.min(this.skip, chunk.length - i);
        this.skip -= n;
        i += n;
      } else if (this.raw > 0 && this.head.length === 0) {
        this.raw--;
        i++;
      } else {
        const typed = this.untyped === 0;
        const headerLen = typed ? 5 : 4;
        const bodyLen = () => this.head.readInt32BE(typed ? 1 : 0) - 4;
        const want = this.head.length < headerLen ? headerLen : headerLen + Math.min(4, bodyLen());
        const take = Math.min(want - this.head.length, chunk.length - i);
        this.head = Buffer.concat([this.head, chunk.subarray(i, i + take)]);
        i += take;
        if (this.head.length < headerLen) continue;
        const peekLen = Math.min(4, bodyLen());
        if (this.head.length < headerLen + peekLen) continue;
        onMessage(typed ? this.head[0] : 0, this.head.subarray(headerLen));
        this.skip = bodyLen() - peekLen;
        this.head = Buffer.alloc(0);
        if (!typed) this.untyped--;
      }
    }
  }
}
