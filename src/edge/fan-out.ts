// How a sibling invocation is started on each platform: thin adapters that send a SiblingRequest to the work
// route with the bearer secret. The route refuses it without the secret, and runs it only under a live slot.
import type { SiblingRequest } from "../runtime/fan-out.js";

/** What a service binding (or `fetch` itself) offers: a Worker's `env.SELF`, for instance. */
export interface Fetcher { fetch(input: string | Request, init?: RequestInit): Promise<Response> }

/** The body of a sibling's `POST /work`: the invocation's shape and its ticket. */
export function siblingBody(request: SiblingRequest, detach: boolean): Record<string, unknown> {
  return {
    ...(request.queues ? { queues: request.queues } : {}), slots: request.slots, batchSize: request.batchSize, budget: request.budgetMs,
    fanOut: { id: request.id, chain: request.chain, generation: request.generation, ...(request.trace ? { trace: request.trace } : {}) },
    ...(detach ? { detach: true } : {}),
  };
}

async function send(fetcher: Fetcher, url: string, secret: string, request: SiblingRequest, detach: boolean, signal?: AbortSignal): Promise<unknown> {
  const res = await fetcher.fetch(url, {
    method: "POST", ...(signal ? { signal } : {}),
    headers: { authorization: `Bearer ${secret}`, "content-type": "application/json" },
    body: JSON.stringify(siblingBody(request, detach)),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`the work route answered ${res.status} to sibling ${request.id}: ${text.slice(0, 300)}`);
  return text === "" ? null : JSON.parse(text);
}

/**
 * Cloudflare Workers: start siblings through a service binding to the Worker itself (`[[services]] binding =
 * "SELF"`, `service` = the Worker's own name). Cloudflare ties a child's life to its caller, so the call
 * lasts the sibling's whole budget (it is never aborted: that would end the sibling): give `waitUntil`
 * (ctx.waitUntil) with it. `path` is where akadzeRoutes
 * is mounted plus `/work`.
 * @example fanOut: { invoke: selfBinding(env.SELF, { secret: env.CRON_SECRET }), waitUntil: (p) => ctx.waitUntil(p) }
 */
export function selfBinding(binding: Fetcher, options: { secret: string; path?: string }): (request: SiblingRequest) => Promise<unknown> {
  // The host is not used for routing: a service binding always reaches the bound Worker.
  const url = `https://akadze.internal${options.path ?? "/akadze/work"}`;
  return (request) => send(binding, url, options.secret, request, false);
}

/**
 * Vercel, Node (`akadze dev`) or any host with a public work route: start siblings by calling the work route's
 * own URL. The sibling answers 202 as soon as it accepted the request and runs on after the response (Vercel's
 * waitUntil, up to the function's maxDuration; a Node server simply runs it), so the caller does not wait for it.
 * A request still unanswered a few seconds on whose sibling never took its slot is aborted (and the slot freed).
 * @example fanOut: { invoke: ownUrl("https://my-app.vercel.app/api/akadze/work", { secret: process.env.CRON_SECRET! }) }
 */
export function ownUrl(url: string | URL, options: { secret: string; fetch?: Fetcher["fetch"] }): (request: SiblingRequest, call?: { signal: AbortSignal }) => Promise<unknown> {
  const fetcher: Fetcher = { fetch: options.fetch ?? ((input, init) => fetch(input, init)) };
  return (request, call) => send(fetcher, String(url), options.secret, request, true, call?.signal);
}
