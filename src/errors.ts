/**
 * Every error class of the library and its CLI, in one place (a leaf: it imports nothing). Each
 * message is one line for the user: the bad value and what was expected, the file and what went
 * wrong. The CLI prints these without a stack trace and maps them to exit codes (UsageError: 2).
 * The worker's RefusedJob (src/cli/cluster/worker.ts) is the one exception: it subclasses BullMQ's
 * UnrecoverableError, and the core must not import BullMQ.
 */

/** Bad arguments: the message names the bad value and what was expected. */
export class InvalidArgumentError extends Error {
  override name = 'InvalidArgumentError';
}

/** No WebGPU adapter, a lost device, or a limit the data does not fit. */
export class WebGpuUnavailableError extends Error {
  override name = 'WebGpuUnavailableError';
}

/** A file problem the user can fix, as one line naming the path and what went wrong (src/io/file-error.ts makes them from Node's errors). */
export class FileError extends Error {
  override name = 'FileError';
}

/**
 * An allocation that failed (out of memory, or over a `ulimit -v`) while a file was being read or
 * indexed: a FileError, as the user fixes it the same way (a smaller input, more memory), so the
 * CLI prints it as one line.
 */
export class OutOfMemoryError extends FileError {
  override name = 'OutOfMemoryError';
}

/** A self-join's (or range search's) bound on candidate pairs crossed: bad input, told apart from other bad input. */
export class TooManyCandidatesError extends InvalidArgumentError {
  override name = 'TooManyCandidatesError';
}

/** Rejection of a request when the queue already holds `maxQueue` requests. */
export class QueueFullError extends Error {
  override name = 'QueueFullError';
}

/** Rejection of a request made after `close()`. */
export class SchedulerClosedError extends Error {
  override name = 'SchedulerClosedError';
}

/** A command line the CLI cannot run (a bad flag or value): exit 2, with the usage hint. */
export class UsageError extends Error {
  override name = 'UsageError';
}

/** A job payload that is not what its kind's schema says (src/cli/cluster/job-schema.ts): the worker refuses the job. */
export class SchemaError extends Error {
  override name = 'SchemaError';
}

/**
 * A distributed run's failure, as one line: what a worker reported for a job, or what became of
 * Redis. An InvalidArgumentError, so that the CLI prints it without a stack trace: the command's
 * own stack says nothing about a failure that happened in a worker or in Redis.
 */
export class DistributedError extends InvalidArgumentError {
  override name = 'DistributedError';
}
