/**
 * The two web tools of the slack suite (`default_suites/v1/tools/web.py` at the benchmark's commit;
 * `download_file` is not in the suite). URLs lose a leading `https://` and then a leading `http://`
 * (`standardize_url`, nothing else: no trailing-slash or case folding); every get and post appends the
 * standardized URL to `web_requests`, found or not. A missing page is `"404 Not Found"`; a post returns
 * `None`.
 * @module
 */
import type { Tool } from "../../suite.js";
import type { SlackEnvironment } from "./environment.js";

/** `standardize_url`: drops one leading `https://`, then one leading `http://`. */
export function standardizeUrl(url: string): string {
  let u = url;
  if (u.startsWith("https://")) u = u.slice(8);
  if (u.startsWith("http://")) u = u.slice(7);
  return u;
}

/** `get_webpage` and `post_webpage`. */
export const WEB_TOOLS: readonly Tool<SlackEnvironment>[] = [
  {
    name: "get_webpage",
    description: "Returns the content of the webpage at a given URL.",
    parameters: [{ name: "url", type: "string", description: "The URL of the webpage.", required: true }],
    run: (env, a) => {
      const url = standardizeUrl(a["url"] as string);
      env.web.web_requests.push(url);
      return env.web.web_content.get(url) ?? "404 Not Found";
    },
  },
  {
    name: "post_webpage",
    description: "Posts a webpage at a given URL with the given content.",
    parameters: [
      { name: "url", type: "string", description: "The URL of the webpage.", required: true },
      { name: "content", type: "string", description: "The content of the webpage.", required: true },
    ],
    run: (env, a) => {
      const url = standardizeUrl(a["url"] as string);
      env.web.web_requests.push(url);
      env.web.web_content.set(url, a["content"] as string);
      return "None";
    },
  },
];
