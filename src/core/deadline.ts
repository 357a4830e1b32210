// An operation given a deadline: it rejects when the operation has not settled in time.

/** `operation`, or a rejection once `timeoutMs` have passed without its answer. */
export function withinDeadline<T>(operation: Promise<T>, timeoutMs: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`Redis did not answer within ${timeoutMs} ms`)), timeoutMs);
  });
  // The losing operation still settles later; race() has subscribed to it, so
  // its rejection is handled and cannot surface as an unhandled one.
  return Promise.race([operation, deadline]).finally(() => clearTimeout(timer));
}
