/**
 * The paragraphs several commands' --help texts share (src/cli/commands/*.ts): the --backend
 * option, the file formats, the outputs' guarantees and exit codes.
 */
import { READ_FORMATS } from '../io/vectors.js';
import { VULKAN_INSTALL } from '../platform/platform.js';

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
Exit codes: 0 ok, 1 failure (unreadable or malformed file, full disk, ...), 2 usage error.`;

/** What to do without a WebGPU adapter, true wherever the package is installed (no path into the repository). */
export const SETUP_HINT = `No WebGPU adapter? Install a Vulkan loader and Mesa's Vulkan drivers for a software one (lavapipe):
${VULKAN_INSTALL.join('\n')}. Or run with --backend cpu.`;
