// Reads a text/event-stream Response as a list of events, for tests of the job events route.

export interface StreamEvent { event: string; data: unknown }

/**
 * The events of `response`'s body, read as they arrive. `until` waits (with a deadline) for an event that
 * `matches` and returns it with every event before it; `rest` reads to the stream's end.
 * @example const events = readEvents(response); await events.until((e) => e.event === "end");
 */
export function readEvents(response: Response) {
  const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
  const seen: StreamEvent[] = [];
  let buffer = "";
  let done = false;
  const parse = () => {
    let end: number;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      let name = "message";
      const data: string[] = [];
      for (const line of block.split("\n")) {
        if (line.startsWith("event: ")) name = line.slice(7);
        else if (line.startsWith("data: ")) data.push(line.slice(6));
      }
      if (data.length > 0) seen.push({ event: name, data: JSON.parse(data.join("\n")) });
    }
  };
  const readMore = async (deadline: number): Promise<void> => {
    const left = deadline - Date.now();
    if (left <= 0) throw new Error("timed out waiting for an event");
    let timer: ReturnType<typeof setTimeout> | undefined;
    const chunk = await Promise.race([
      reader.read(),
      new Promise<never>((_, reject) => { timer = setTimeout(() => reject(new Error("timed out waiting for an event")), left); }),
    ]).finally(() => clearTimeout(timer));
    if (chunk.done) done = true;
    else buffer += chunk.value;
    parse();
  };
  return {
    seen,
    async until(matches: (e: StreamEvent) => boolean, timeoutMs = 20_000): Promise<StreamEvent> {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const found = seen.find(matches);
        if (found) return found;
        if (done) throw new Error(`the stream ended without the event; it sent ${JSON.stringify(seen)}`);
        await readMore(deadline);
      }
    },
    async rest(timeoutMs = 20_000): Promise<StreamEvent[]> {
      const deadline = Date.now() + timeoutMs;
      while (!done) await readMore(deadline);
      return seen;
    },
    cancel: () => reader.cancel().catch(() => {}),
  };
}
