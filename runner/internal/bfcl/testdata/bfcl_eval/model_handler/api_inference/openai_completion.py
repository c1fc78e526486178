import json
import os
import re
import urllib.request

from bfcl_eval.model_handler.base_handler import BaseHandler


class OpenAICompletionsHandler(BaseHandler):
    def __init__(self, model_name, temperature, registry_name, is_fc_model, **kwargs):
        super().__init__(model_name, temperature, registry_name, is_fc_model, **kwargs)
        # Read once, as the OpenAI client does when it is built.
        self.base_url = os.getenv("OPENAI_BASE_URL", "https://api.openai.com/v1")
        self.api_key = os.getenv("OPENAI_API_KEY")
        if not self.api_key:
            raise RuntimeError("The api_key client option must be set")

    def _compile_tools(self, functions):
        tools = []
        for f in functions:
            params = dict(f["parameters"], type="object")
            tools.append({"type": "function", "function": {
                "name": re.sub(r"\.", "_", f["name"]),
                "description": f["description"],
                "parameters": params,
            }})
        return tools

    def _query(self, messages, tools):
        body = {"messages": messages, "model": self.model_name, "temperature": self.temperature, "store": False}
        if tools:
            body["tools"] = tools
        req = urllib.request.Request(
            self.base_url.rstrip("/") + "/chat/completions",
            data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json", "Authorization": f"Bearer {self.api_key}"},
        )
        with urllib.request.urlopen(req, timeout=30) as r:
            return json.load(r)["choices"][0]["message"]
