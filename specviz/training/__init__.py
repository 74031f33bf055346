"""Training the two shipped drafts on the target's own outputs (`python -m specviz.distill`; the recipe is
in cli.py). One idea per file:

  (specviz/subjects.json: the task templates and subject lists, training and held-out, read by specviz/prompting.py)
  data.py        prompts, the target's answers and their top-k soft labels, cached in job order
  loss.py        the one top-k distillation loss
  token.py       the untrained token draft and its loss on one sequence
  feature.py     the untrained feature draft, the target states it reads (cached), its loss
  train.py       which weights train, and the AdamW loop
  export.py      a trained draft's own weights as bf16 safetensors + config.json
  evaluate.py    the model card's figures, on held-out prompts
  cli.py         the command line: train (default) and eval
"""
