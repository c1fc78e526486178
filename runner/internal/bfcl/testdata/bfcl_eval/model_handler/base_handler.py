from bfcl_eval.constants.default_prompts import MAXIMUM_STEP_LIMIT


class BaseHandler:
    def __init__(self, model_name, temperature, registry_name, is_fc_model, **kwargs):
        self.model_name = model_name
        self.temperature = temperature
        self.registry_name = registry_name
        self.is_fc_model = is_fc_model

    def inference(self, test_entry, include_input_log, exclude_state_log):
        multi_turn = "multi_turn" in test_entry["id"]
        messages = list(test_entry["question"][0])
        tools = self._compile_tools(test_entry["function"]) if self.is_fc_model else []
        steps, requests, answers = 0, 0, []
        while True:
            reply = self._query(messages, tools)
            requests += 1
            calls = reply.get("tool_calls") or []
            if not calls:
                answers.append(reply.get("content") or "")
                break
            answers.append([{c["function"]["name"]: c["function"]["arguments"]} for c in calls])
            if not multi_turn:
                break
            messages.append({"role": "assistant", "content": None, "tool_calls": calls})
            for c in calls:
                messages.append({"role": "tool", "tool_call_id": c["id"], "content": "done"})
            steps += 1
            if steps > MAXIMUM_STEP_LIMIT:
                break
        result = answers if multi_turn else answers[0]
        return result, {"steps": steps, "requests": requests}
