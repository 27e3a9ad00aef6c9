/**
 * The paragraphs several commands' --help texts share (src/cli/commands/*.ts): the --backend
 * option, the file formats, the outputs' guarantees and exit codes.
 */
import { READ_FORMATS } from '../io/vectors.js';
import { VULKAN_INSTALL } from '../platform/platform.js';
import { STDIN_FORMATS } from './stdio.js';

export const BACKEND_OPT = '  --backend B       auto | webgpu | cpu (default auto: WebGPU when an adapter exists)';
export const FILES = `Vector files: ${READ_FORMATS.join(', ')}.`;
export const ID_FILES = `Id files: .npy of int64 (also int32, uint32), shape (n,) or (n, 1); .jsonl: the 'id' of
every line (digits, as a number or a string: not 1e3 or 4.0); or text (.txt, .csv, anything else):
one decimal id per line, blank lines ignored. Ids are integers in [0, 2^53 - 1]; a bad one is
refused (exit 1) with the file, the line (or element) and the value.`;
export const NEIGHBOUR_IDS = `neighbour ids: .npy (int64), .csv, .jsonl, or .ivecs (int32:
                    refused, nothing written, if an id exceeds 2147483647); missing
                    neighbours are -1`;
export const OUTPUTS = `Every flag and output path is checked before any work starts; an output may not be an input
or another output (exit 2). Outputs are written to temporary files (.NAME.webgpu-knn-tmp-HOST-PID-*)
in the output's directory and renamed into place together at the end: after a failure none appears
(old files stay as they were); Ctrl-C removes the temporary files (an output already renamed into
place is complete); a temporary file left by a killed run is removed by the next run on the same
host writing that output (another host's are left to it).
Exit codes: 0 ok, 1 failure (unreadable or malformed file, full disk, ...), 2 usage error.
-q, --quiet (nothing on stderr but an error) and --json (a summary on stdout): 'webgpu-knn --help'.`;

/** The --stdin-format option of a command with a vector input that may be `-`. */
export const STDIN_OPT = `  --stdin-format F  the format of the vector input given as - (read from stdin):
                    ${STDIN_FORMATS.join(' | ')}`;
/** The CAGRA walk's flags beyond --itopk (search and knn-graph; src/indexes/graph/params.ts), and what a flag of another kind does. */
export const WALK_OPTS = `  --search-width W  CAGRA: parents the walk expands an iteration, in [1, 32] and at most
                    512 / degree (default 1): fewer, wider iterations
  --max-iterations I  CAGRA: most iterations of the walk (default 0: itopk / W + 32)
  --seeds S         CAGRA: the walk starts from the query's S nearest entry rows, in [1, 256]
                    (default 16)
  --entry-rows E    CAGRA: entry rows a query is scored against to pick its seeds, in [1, 4096]
                    (default 4 sqrt(n), at least 256); more for rows in many tight clusters
                    --nprobe, --itopk and these, given for an index of another kind, are
                    ignored, with a line saying so`;
/** The --stdout-format option of a command with an output that may be `-`. */
export const STDOUT_OPT = `  --stdout-format F the format of the output given as - (written to stdout): one that flag
                    writes, without the dot (csv, jsonl, npy, ...)`;
/** What `-` does, for the commands that take it. */
export const STREAMS = `Streams: - as an input's path (flags marked "or -") reads stdin: read whole into a private
temporary file ($TMPDIR) first, as the readers need the row count; - as an output's path writes
stdout: the output is written to a temporary file and copied to stdout only once the command has
succeeded (after a failure stdout gets nothing). At most one input and one output can be -.
Index and id files, and paths handed to --distributed workers, refuse -. --json (see
'webgpu-knn --help') is refused with an output on stdout.`;

/** What to do without a WebGPU adapter, true wherever the package is installed (no path into the repository). */
export const SETUP_HINT = `No WebGPU adapter? Install a Vulkan loader and Mesa's Vulkan drivers for a software one (lavapipe):
${VULKAN_INSTALL.join('\n')}. Or run with --backend cpu.`;
