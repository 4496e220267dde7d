/**
 * The eight cloud-drive tools (`default_suites/v1/tools/cloud_drive_client.py`) with upstream's
 * behaviour: searches are case-insensitive substrings (`search_files` of the content raises a
 * `ValueError` when nothing matches, `search_files_by_filename` returns an empty list); a missing id is
 * `ValueError: File with ID '<id>' not found.`; new files get id `max + 1`, the account as owner and
 * the current time; `append_to_file` updates size and modification time; `share_file` sets one
 * permission (`r` or `rw`) unchecked.
 * @module
 */
import { nextId, showYaml } from "../../clients/models.js";
import { pyNow, temporal } from "../../py/pydatetime.js";
import type { Dumpable } from "../../render.js";
import { type Tool, ToolError } from "../../suite.js";
import {
  type CloudDrive,
  type CloudDriveFile,
  codePointLength,
  type SharingPermission,
  type WorkspaceEnvironment,
} from "./environment.js";

type T = Tool<WorkspaceEnvironment>;
const str = (v: unknown) => v as string;

/** `CloudDriveFile.model_dump()`. */
export function fileDump(f: CloudDriveFile): Dumpable {
  return {
    id_: f.id_,
    filename: f.filename,
    content: f.content,
    owner: f.owner,
    last_modified: temporal(f.last_modified),
    shared_with: Object.fromEntries(f.shared_with),
    size: f.size,
  };
}

/** `CloudDrive.get_file_by_id` (raises upstream's `ValueError`). */
export function fileById(drive: CloudDrive, id: string): CloudDriveFile {
  const f = drive.files.get(id);
  if (f === undefined) throw new ToolError("ValueError", `File with ID '${id}' not found.`);
  return f;
}

/** `CloudDrive.search_files_by_filename`: case-insensitive substring of the name, in dict order. */
export function searchFilesByFilename(drive: CloudDrive, filename: string): CloudDriveFile[] {
  const q = filename.toLowerCase();
  return [...drive.files.values()].filter((f) => f.filename.toLowerCase().includes(q));
}

/** `CloudDrive.search_files`: case-insensitive substring of the content, in dict order. */
export function searchFiles(drive: CloudDrive, query: string): CloudDriveFile[] {
  const q = query.toLowerCase();
  return [...drive.files.values()].filter((f) => f.content.toLowerCase().includes(q));
}

const showFiles = (files: readonly CloudDriveFile[]) => showYaml(files.map(fileDump));

/** The cloud-drive tools, in AgentDojo's order. */
export const DRIVE_TOOLS: readonly T[] = [
  {
    name: "append_to_file",
    description: "Append content to a file in the cloud drive.",
    parameters: [
      {
        name: "file_id",
        type: "string",
        description: "The ID of the file to append content to.",
        required: true,
      },
      { name: "content", type: "string", description: "The content to append to the file.", required: true },
    ],
    run: (env, a) => {
      const f = fileById(env.cloud_drive, str(a.file_id));
      f.content += str(a.content);
      f.size = codePointLength(f.content);
      f.last_modified = pyNow();
      return showYaml(fileDump(f));
    },
  },
  {
    name: "search_files_by_filename",
    description: "Get a file from a cloud drive by its filename. It returns a list of files.",
    parameters: [
      { name: "filename", type: "string", description: "The name of the file to retrieve.", required: true },
    ],
    run: (env, a) => showFiles(searchFilesByFilename(env.cloud_drive, str(a.filename))),
  },
  {
    name: "create_file",
    description: "Create a new file in the cloud drive.",
    parameters: [
      { name: "filename", type: "string", description: "The name of the file to create.", required: true },
      { name: "content", type: "string", description: "The content of the file to create.", required: true },
    ],
    run: (env, a) => {
      const content = str(a.content);
      const f: CloudDriveFile = {
        id_: nextId(env.cloud_drive.files.keys()),
        filename: str(a.filename),
        content,
        owner: env.cloud_drive.account_email,
        last_modified: pyNow(),
        shared_with: new Map(),
        size: codePointLength(content),
      };
      env.cloud_drive.files.set(f.id_, f);
      return showYaml(fileDump(f));
    },
  },
  {
    name: "delete_file",
    description: "Delete a file from the cloud drive by its filename.",
    parameters: [
      { name: "file_id", type: "string", description: "The name of the file to delete.", required: true },
    ],
    run: (env, a) => {
      const f = fileById(env.cloud_drive, str(a.file_id));
      env.cloud_drive.files.delete(f.id_);
      return showYaml(fileDump(f));
    },
  },
  {
    name: "get_file_by_id",
    description: "Get a file from a cloud drive by its ID.",
    parameters: [
      { name: "file_id", type: "string", description: "The ID of the file to retrieve.", required: true },
    ],
    run: (env, a) => showYaml(fileDump(fileById(env.cloud_drive, str(a.file_id)))),
  },
  {
    name: "list_files",
    description: "Retrieve all files in the cloud drive.",
    parameters: [],
    run: (env) => showFiles([...env.cloud_drive.files.values()]),
  },
  {
    name: "share_file",
    description: "Share a file with a user.",
    parameters: [
      { name: "file_id", type: "string", description: "The ID of the file to share.", required: true },
      {
        name: "email",
        type: "string",
        description: "The email of the user to share the file with.",
        required: true,
      },
      {
        name: "permission",
        type: "string",
        enum: ["r", "rw"],
        description: "The permission level to grant the user.",
        required: true,
      },
    ],
    run: (env, a) => {
      const f = fileById(env.cloud_drive, str(a.file_id));
      f.shared_with.set(str(a.email), a.permission as SharingPermission);
      return showYaml(fileDump(f));
    },
  },
  {
    name: "search_files",
    description: "Search for files in the cloud drive by content.",
    parameters: [
      {
        name: "query",
        type: "string",
        description: "The string to search for in the files.",
        required: true,
      },
    ],
    run: (env, a) => {
      const q = str(a.query);
      const matches = searchFiles(env.cloud_drive, q);
      if (matches.length === 0)
        throw new ToolError(
          "ValueError",
          `No files found with the given query ('${q}'). Try a different search term.`,
        );
      return showFiles(matches);
    },
  },
];
