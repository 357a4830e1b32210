// An operation given a deadline: it rejects when the operation has not settled in time.

/**
 * `operation`, or a rejection once `timeoutMs` have passed without its answer.
 * One promise and one timer per call (every store command pays it): no race
 * of two promises and no `finally`, which cost twice as much. A late answer
 * still settles `operation`, whose rejection is handled here, so it cannot
 * surface as an unhandled one.
 */
export function withinDeadline<T>(operation: Promise<T>, timeoutMs: number): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`Redis did not answer within ${timeoutMs} ms`)), timeoutMs);
    operation.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        clearTimeout(timer);
        reject(error);
      },
    );
  });
}
