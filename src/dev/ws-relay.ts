// WebSocket-to-TCP relay in the shape Neon's wsproxy has: the serverless driver opens
// `ws://HOST/v2?address=db-host:port` and speaks the Postgres wire protocol in binary
// messages, which we copy to a TCP socket and back.
import type { Server } from "node:http";
import { connect } from "node:net";
import { pipeline } from "node:stream";
import { WebSocketServer, createWebSocketStream } from "ws";

export interface RelayTarget {
  host: string;
  port: number;
}

export interface WsRelay {
  close(): Promise<void>;
}

/**
 * Handle WebSocket upgrades on `server` at path `/v2`. `resolveTarget` maps the requested
 * `address` to where we really connect; returning undefined refuses it (we are not an open
 * relay to arbitrary hosts).
 */
export function attachWsRelay(
  server: Server,
  resolveTarget: (address: string) => RelayTarget | undefined,
): WsRelay {
  const wss = new WebSocketServer({ noServer: true, perMessageDeflate: false });

  server.on("upgrade", (req, socket, head) => {
    socket.on("error", () => socket.destroy()); // a client vanishing mid-handshake is not our crash
    const url = new URL(req.url ?? "/", "http://relay.invalid");
    const target =
      url.pathname === "/v2" ? resolveTarget(url.searchParams.get("address") ?? "") : undefined;
    if (!target) {
      socket.end("HTTP/1.1 404 Not Found\r\nConnection: close\r\n\r\n");
      return;
    }
    wss.handleUpgrade(req, socket, head, (ws) => {
      const tcp = connect(target.port, target.host);
      tcp.setNoDelay(true);
      // The stream wrapper gives us backpressure; each chunk goes out as one binary message.
      const wsStream = createWebSocketStream(ws);
      // A half-open Postgres session is useless, so any failure or close ends both sides.
      const teardown = (err?: Error | null) => {
        if (err) {
          tcp.destroy();
          ws.terminate();
        }
      };
      pipeline(wsStream, tcp, teardown);
      pipeline(tcp, wsStream, teardown);
      tcp.on("close", () => ws.close());
      ws.on("close", () => tcp.end());
    });
  });

  return {
    close() {
      for (const client of wss.clients) client.terminate();
      return new Promise<void>((resolve) => wss.close(() => resolve()));
    },
  };
}
