// For a command that only reads a config file (`hookgate config get`): the file read and parsed as
// JSON5, and the error that names it, without the schemas and the rest of config.ts, whose loading
// is most of a short command's time.
export { readConfigFile } from '../config/load.ts';
export { ConfigError } from '../errors.ts';
