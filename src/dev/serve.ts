// Serves a Web fetch handler (a Hono app's `fetch`) on Node's http server, for `akadze dev`.
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

export interface Served {
  url: string;
  port: number;
  close(): Promise<void>;
}

/**
 * Listens on 127.0.0.1:`port` (0 picks a free one) and answers every request with `handler`.
 * @example const served = await serveFetch((req) => web.fetch(req, env, ctx), 4000);
 */
export async function serveFetch(handler: (request: Request) => Response | Promise<Response>, port: number): Promise<Served> {
  const server = createServer(async (req, res) => {
    try {
      const left = new AbortController();
      res.on("close", () => left.abort());
      const response = await handler(await toRequest(req, left.signal));
      const headers: string[] = [];
      response.headers.forEach((value, name) => { headers.push(name, value); });
      res.writeHead(response.status, headers);
      // An event stream goes out as it is written (a job's events route); anything else whole.
      if (response.body && response.headers.get("content-type")?.startsWith("text/event-stream")) {
        await streamBody(response.body, res, left.signal);
        return;
      }
      res.end(Buffer.from(await response.arrayBuffer()));
    } catch (error) {
      res.writeHead(500, { "content-type": "application/json" });
      res.end(JSON.stringify({ error: { code: "internal_error", message: String(error) } }));
    }
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, "127.0.0.1", () => resolve());
  });
  const actual = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${actual}`,
    port: actual,
    close: () => new Promise((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }),
  };
}

/** Writes `body` chunk by chunk until it ends or the client leaves (which cancels it). */
async function streamBody(body: ReadableStream<Uint8Array>, res: ServerResponse, left: AbortSignal): Promise<void> {
  const reader = body.getReader();
  left.addEventListener("abort", () => { void reader.cancel().catch(() => {}); }, { once: true });
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    res.write(value);
  }
  res.end();
}

async function toRequest(req: IncomingMessage, signal: AbortSignal): Promise<Request> {
  const chunks: Buffer[] = [];
  for await (const chunk of req as AsyncIterable<Buffer>) chunks.push(chunk);
  const body = chunks.length > 0 ? Buffer.concat(chunks) : undefined;
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headers)) {
    for (const v of Array.isArray(value) ? value : value === undefined ? [] : [value]) headers.append(name, v);
  }
  return new Request(`http://${req.headers.host ?? "127.0.0.1"}${req.url ?? "/"}`, { method: req.method, headers, body, signal });
}
