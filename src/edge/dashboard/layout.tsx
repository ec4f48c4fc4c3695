// The page frame, its stylesheet and the small pieces every page shares. Everything is inline: the
// dashboard loads no script, font or stylesheet from anywhere, so it works offline and in workerd.
import type { Child } from "hono/jsx";
import { formatAgo, formatTime } from "../../core/time-text.js";
import { CSRF_FIELD } from "./session.js";

const CSS = `
*{box-sizing:border-box}
body{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#1f2933;background:#f4f6f8}
a{color:#2159c4;text-decoration:none}a:hover{text-decoration:underline}
header{display:flex;align-items:center;gap:20px;padding:10px 24px;background:#16202c;color:#e6ebf0}
header .brand{font-weight:700;font-size:16px;letter-spacing:.02em;color:#fff}
header nav a{color:#c3cfdb;margin-right:14px}header nav a.on{color:#fff;font-weight:600}
header form.inline{margin-left:auto}
main{max-width:1180px;margin:0 auto;padding:20px 24px 40px}
h1{font-size:20px;margin:4px 0 16px}h2{font-size:15px;margin:0 0 10px}
.card{background:#fff;border:1px solid #dde3ea;border-radius:8px;padding:14px 16px;margin-bottom:18px}
.grid{display:grid;grid-template-columns:repeat(auto-fit,minmax(420px,1fr));gap:18px}.grid .card{margin:0}
table{width:100%;border-collapse:collapse}
th,td{text-align:left;padding:6px 8px;border-bottom:1px solid #edf0f3;vertical-align:top}
th{white-space:nowrap;font-size:12px;font-weight:600;color:#5b6b7b;text-transform:uppercase;letter-spacing:.03em}
td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}
tr:last-child td{border-bottom:0}
.muted{color:#7b8794}.empty{color:#7b8794;padding:6px 0}
.badge{display:inline-block;padding:1px 8px;border-radius:10px;font-size:12px;font-weight:600;background:#e4e8ed;color:#3e4c59}
.queued{background:#e3ecfb;color:#1d4fa8}.running{background:#fff1d6;color:#8a5a00}.succeeded,.live{background:#dcf4e4;color:#17643a}
.failed,.lost{background:#fde2e1;color:#a61b1b}.cancelled,.stopped{background:#eceff2;color:#52606d}.paused{background:#fde2e1;color:#a61b1b}
button{font:inherit;font-size:13px;padding:4px 12px;border-radius:6px;border:1px solid #b8c4d0;background:#fff;color:#1f2933;cursor:pointer}
button:hover{background:#eef2f6}button.primary{background:#2159c4;border-color:#2159c4;color:#fff}button.danger{color:#a61b1b;border-color:#e5a5a3}
form.inline{display:inline;margin:0}
header button{background:transparent;color:#c3cfdb;border-color:#3e4c59}
input,select,textarea{font:inherit;padding:4px 8px;border:1px solid #b8c4d0;border-radius:6px;background:#fff}
.filters{display:flex;gap:10px;align-items:end;flex-wrap:wrap}.filters label{display:flex;flex-direction:column;font-size:12px;color:#5b6b7b;gap:3px}
pre{margin:0;padding:10px;background:#f6f8fa;border:1px solid #e4e8ed;border-radius:6px;overflow:auto;font:12px/1.5 ui-monospace,Menlo,Consolas,monospace;white-space:pre-wrap;word-break:break-word}
dl{display:grid;grid-template-columns:max-content 1fr;gap:4px 18px;margin:0}dt{color:#5b6b7b}dd{margin:0}
.notice{padding:8px 12px;border-radius:6px;background:#dcf4e4;color:#17643a;margin-bottom:14px}
.problem{background:#fde2e1;color:#a61b1b}
.err{border-left:3px solid #e5a5a3;padding:4px 0 4px 12px;margin-bottom:12px}
details summary{cursor:pointer;color:#5b6b7b;margin:4px 0}
.chart{display:flex;gap:28px;align-items:center}.bars{flex:1}.bars svg{display:block;width:100%;height:90px}
.axis{display:flex;justify-content:space-between;font-size:11px;color:#7b8794;margin-top:3px}
.legend{font-size:13px}.legend b{font-size:20px;display:block}.ok{color:#17643a}.bad{color:#a61b1b}
.login{max-width:360px;margin:12vh auto}.login input{width:100%;margin:8px 0 12px}
form.schedule{display:grid;gap:10px;max-width:640px}form.schedule label{display:flex;flex-direction:column;font-size:12px;color:#5b6b7b;gap:3px}
textarea{font:12px/1.5 ui-monospace,Menlo,Consolas,monospace}
.pager{display:flex;gap:14px;margin-top:10px}time{white-space:nowrap}
`;

/** What every page knows: where the dashboard is mounted, the session's CSRF token and the time. */
export interface PageContext { base: string; csrf: string | null; now: Date }

/** The frame of every page: header with navigation and sign-out, then the content. @example <Layout ctx={ctx} title="Jobs">...</Layout> */
export function Layout(props: { ctx: PageContext; title: string; active?: "overview" | "jobs"; children?: Child }) {
  const { base, csrf } = props.ctx;
  return (
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <meta name="referrer" content="same-origin" />
        <title>{props.title} · akadze</title>
        {/* A constant of this file, never user data: unescaped so the quotes in font names survive. */}
        <style dangerouslySetInnerHTML={{ __html: CSS }} />
      </head>
      <body>
        <header>
          <span class="brand">akadze</span>
          {csrf && (
            <nav>
              <a href={base} class={props.active === "overview" ? "on" : ""}>Overview</a>
              <a href={`${base}/jobs`} class={props.active === "jobs" ? "on" : ""}>Jobs</a>
              <a href={`${base}/jobs?state=failed`}>Failed</a>
            </nav>
          )}
          {csrf && <Post ctx={props.ctx} action={`${base}/logout`} label="Sign out" />}
        </header>
        <main>{props.children}</main>
      </body>
    </html>
  );
}

/** A button that POSTs to `action` with the session's CSRF token. @example <Post ctx={ctx} action={`${ctx.base}/logout`} label="Sign out" /> */
export function Post(props: { ctx: PageContext; action: string; label: string; kind?: "primary" | "danger"; fields?: Record<string, string> }) {
  return (
    <form class="inline" method="post" action={props.action}>
      <input type="hidden" name={CSRF_FIELD} value={props.ctx.csrf ?? ""} />
      {Object.entries(props.fields ?? {}).map(([name, value]) => <input type="hidden" name={name} value={value} />)}
      <button type="submit" class={props.kind ?? ""}>{props.label}</button>
    </form>
  );
}

/** A state (or worker status) as a coloured label. @example <Badge value="failed" /> */
/** A card holding a table (`head`'s cells, then `rows`), or `empty` when there are no rows; `children` follow it. */
export function TableCard(props: { title?: string; empty: string; tableId?: string; head: Child; rows: Child[]; children?: Child }) {
  return (
    <div class="card">
      {props.title !== undefined && <h2>{props.title}</h2>}
      {props.rows.length === 0 ? <p class="empty">{props.empty}</p> : (
        <table id={props.tableId}><thead><tr>{props.head}</tr></thead><tbody>{props.rows}</tbody></table>
      )}
      {props.children}
    </div>
  );
}

export function Badge(props: { value: string }) {
  return <span class={`badge ${props.value}`}>{props.value}</span>;
}

/** A time as "5m ago", with the exact UTC time on hover. @example <Ago at={job.createdAt} now={ctx.now} /> */
export function Ago(props: { at: string | Date | null | undefined; now: Date }) {
  const iso = props.at instanceof Date ? props.at.toISOString() : props.at;
  if (!iso) return <span class="muted">-</span>;
  return <time datetime={iso} title={formatTime(iso)}>{formatAgo(iso, props.now)}</time>;
}

/** A one-line message above the page's content. @example <Notice text="Queue paused." /> */
export function Notice(props: { text: string | undefined; problem?: boolean }) {
  return props.text ? <div class={props.problem ? "notice problem" : "notice"} role="status">{props.text}</div> : null;
}

/** The sign-in form, and the page a request without a valid session gets. @example <LoginPage ctx={ctx} problem="Wrong secret." /> */
export function LoginPage(props: { ctx: PageContext; problem?: string }) {
  return (
    <Layout ctx={props.ctx} title="Sign in">
      <div class="card login">
        <h1>Sign in</h1>
        <Notice text={props.problem} problem />
        <form method="post" action={`${props.ctx.base}/login`}>
          <label for="secret">The secret of akadze's routes (e.g. CRON_SECRET)</label>
          <input id="secret" name="secret" type="password" autocomplete="current-password" required autofocus />
          <button type="submit" class="primary">Sign in</button>
        </form>
      </div>
    </Layout>
  );
}

/** A refused or failed request, as a page. @example <ProblemPage ctx={ctx} title="Not found" message="job 7 does not exist" /> */
export function ProblemPage(props: { ctx: PageContext; title: string; message: string }) {
  return (
    <Layout ctx={props.ctx} title={props.title}>
      <h1>{props.title}</h1>
      <Notice text={props.message} problem />
      <p><a href={props.ctx.base}>Back to the overview</a></p>
    </Layout>
  );
}
