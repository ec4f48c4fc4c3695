// Vercel serves files under api/ as functions; this one is the whole app (see functions/vercel.ts).
export { GET, POST } from "../functions/vercel.js";
