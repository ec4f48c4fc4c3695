// Vercel function (Node.js runtime): every request goes to the example app, env from process.env.
// vercel.json sends /api/* here, allows it 60 s, and calls /api/akadze/work every minute.
import { Hono } from "hono";
import { vercelHandlers } from "../src/edge/hono.js";
import { createWeb, type Env } from "./app.js";

/** Inside vercel.json's maxDuration (60 s), with room to record outcomes after the last job. */
export const VERCEL_BUDGET = "45s";

const api = new Hono<{ Bindings: Env }>().basePath("/api").route("/", createWeb({ budget: VERCEL_BUDGET }));

export const { GET, POST } = vercelHandlers(api, () => process.env as unknown as Env);
