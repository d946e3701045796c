#!/usr/bin/python3
"""Generates a conformance case for tunehub against PyTorch, with seeded random weights and inputs, and
writes DIR/state.pt, the inputs and the outputs as raw little-endian files:

- a torchvision CNN (random batch-norm running statistics, so that folding is exercised): DIR/input.bin
  (float32 [BATCH, 3, SIZE, SIZE]) and DIR/logits.bin (float32 [BATCH, 1000]);
- vit (torchvision's vit_b_16, SIZE 224): the same two files. torchvision starts the head and the class
  token (and every bias) at zero, which makes every logit 0 whatever the encoder computes, so every bias,
  every all-zero tensor and every layer-norm weight gets random values here;
- bert (bert-base, written below with Hugging Face BertModel's parameter names, SIZE = sequence length):
  DIR/input_ids.bin, token_type_ids.bin, attention_mask.bin (int64 [BATCH, SIZE]; odd rows pad their
  last 40 positions), DIR/last_hidden_state.bin (float32 [BATCH, SIZE, 768]) and pooler_output.bin
  (float32 [BATCH, 768]).

The script exits 1 when a reference output is constant along its last axis or across the batch, or when
bert's attention mask changes nothing: a comparison against such an output would prove nothing.

usage: conformance_torch.py NAME BATCH SIZE DIR
"""
import math
import sys

import torch
import torchvision.models as tvm

BUILDERS = {
    "resnet-18": lambda: tvm.resnet18(),
    "resnet-34": lambda: tvm.resnet34(),
    "resnet-50": lambda: tvm.resnet50(),
    "resnet-101": lambda: tvm.resnet101(),
    "resnet-152": lambda: tvm.resnet152(),
    "vgg-11": lambda: tvm.vgg11(),
    "vgg-13": lambda: tvm.vgg13(),
    "vgg-16": lambda: tvm.vgg16(),
    "vgg-19": lambda: tvm.vgg19(),
    "mobilenet-v2": lambda: tvm.mobilenet_v2(),
    "squeezenet_v1.0": lambda: tvm.squeezenet1_0(),
    "squeezenet_v1.1": lambda: tvm.squeezenet1_1(),
    "inception_v3": lambda: tvm.inception_v3(aux_logits=False, init_weights=False, transform_input=False),
}


class Fail(Exception):
    pass


def uniform(shape, lo, hi, g):
    return torch.rand(shape, generator=g) * (hi - lo) + lo


def check_varies(name, y):
    """Raises Fail when y is (nearly) constant along its last axis or across its first (the batch)."""
    scale = float(y.abs().max())
    rows = y.reshape(-1, y.shape[-1])
    spread = float((rows.max(dim=1).values - rows.min(dim=1).values).min())
    if not math.isfinite(scale) or scale == 0 or spread <= 1e-3 * scale:
        raise Fail("%s is constant along its last axis (max |y| %g, smallest spread %g)"
                   % (name, scale, spread))
    for b in range(1, y.shape[0]):
        if float((y[b] - y[0]).abs().max()) <= 1e-3 * scale:
            raise Fail("%s: batch row %d equals row 0" % (name, b))
    print("%s: shape %s, max |y| %.4g, smallest spread along the last axis %.4g"
          % (name, list(y.shape), scale, spread))


def write(out, name, t, dtype):
    t.detach().contiguous().numpy().astype(dtype).tofile("%s/%s.bin" % (out, name))


def randomize_cnn(model, g):
    """Gives every BatchNorm2d random running statistics and affine parameters (so that folding is
    exercised) and every linear and convolution bias random values."""
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                c = m.num_features
                m.running_mean.copy_((torch.rand(c, generator=g) - 0.5) * 0.2)
                m.running_var.copy_(torch.rand(c, generator=g) * 0.8 + 0.6)
                m.weight.copy_(torch.rand(c, generator=g) * 0.6 + 0.6)
                m.bias.copy_((torch.rand(c, generator=g) - 0.5) * 0.2)
            elif isinstance(m, (torch.nn.Linear, torch.nn.Conv2d)) and m.bias is not None:
                m.bias.copy_((torch.rand(m.bias.shape, generator=g) - 0.5) * 0.2)


def cnn(name, batch, size, out, g):
    model = BUILDERS[name]()
    randomize_cnn(model, g)
    model.eval()
    x = torch.rand(batch, 3, size, size, generator=g) * 2 - 1
    with torch.no_grad():
        y = model(x)
    torch.save(model.state_dict(), out + "/state.pt")
    write(out, "input", x, "<f4")
    write(out, "logits", y, "<f4")


def randomize_zeros(model, g):
    """Gives every bias, every layer-norm weight and every other all-zero parameter seeded random values
    (layer-norm weights in [0.8, 1.2], biases in +-0.1, a linear weight +-sqrt(3/fan_in), anything else
    normal with std 0.02), and checks that no parameter is left all-zero or all-one."""
    with torch.no_grad():
        ln_weights = set(id(m.weight) for m in model.modules() if isinstance(m, torch.nn.LayerNorm))
        for name, p in model.named_parameters():
            if id(p) in ln_weights:
                p.copy_(uniform(p.shape, 0.8, 1.2, g))
            elif name.endswith("bias"):
                p.copy_(uniform(p.shape, -0.1, 0.1, g))
            elif not bool(p.any()):
                if p.dim() == 2:
                    a = math.sqrt(3.0 / p.shape[1])
                    p.copy_(uniform(p.shape, -a, a, g))
                else:
                    p.copy_(torch.randn(p.shape, generator=g) * 0.02)
        for name, p in model.named_parameters():
            if not bool(p.any()) or bool((p == 1).all()):
                raise Fail("parameter %s is still constant" % name)


def vit(batch, size, out, g):
    if size != 224:
        raise Fail("vit_b_16 takes 224x224 images, not %d" % size)
    model = tvm.vit_b_16()
    randomize_zeros(model, g)
    model.eval()
    x = torch.rand(batch, 3, size, size, generator=g) * 2 - 1
    with torch.no_grad():
        y = model(x)
    check_varies("logits", y)
    torch.save(model.state_dict(), out + "/state.pt")
    write(out, "input", x, "<f4")
    write(out, "logits", y, "<f4")


# bert-base as Hugging Face's BertModel computes it in eval mode (no dropout), with its state_dict names.
HIDDEN, HEADS, FFN, VOCAB, POSITIONS, TYPES, LAYERS, EPS = 768, 12, 3072, 30522, 512, 2, 12, 1e-12
BERT_BASE_PARAMS = 109482240


class BertEmbeddings(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.word_embeddings = torch.nn.Embedding(VOCAB, HIDDEN)
        self.position_embeddings = torch.nn.Embedding(POSITIONS, HIDDEN)
        self.token_type_embeddings = torch.nn.Embedding(TYPES, HIDDEN)
        self.LayerNorm = torch.nn.LayerNorm(HIDDEN, eps=EPS)
        # BertModel's int64 buffers, in its state_dict too: torch2params.py must skip them.
        self.register_buffer("position_ids", torch.arange(POSITIONS).expand((1, -1)))
        self.register_buffer("token_type_ids", torch.zeros((1, POSITIONS), dtype=torch.long))

    def forward(self, input_ids, token_type_ids):
        pos = self.position_ids[:, : input_ids.shape[1]]
        e = self.word_embeddings(input_ids) + self.token_type_embeddings(token_type_ids)
        return self.LayerNorm(e + self.position_embeddings(pos))


class BertSelfAttention(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.query = torch.nn.Linear(HIDDEN, HIDDEN)
        self.key = torch.nn.Linear(HIDDEN, HIDDEN)
        self.value = torch.nn.Linear(HIDDEN, HIDDEN)

    def forward(self, x, mask):
        b, s, _ = x.shape
        d = HIDDEN // HEADS

        def heads(t):
            return t.view(b, s, HEADS, d).permute(0, 2, 1, 3)

        q, k, v = heads(self.query(x)), heads(self.key(x)), heads(self.value(x))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(d) + mask
        ctx = torch.matmul(torch.softmax(scores, dim=-1), v)
        return ctx.permute(0, 2, 1, 3).reshape(b, s, HIDDEN)


class BertDenseNorm(torch.nn.Module):
    """BertSelfOutput and BertOutput: LayerNorm(residual + dense(x))."""

    def __init__(self, fan_in):
        super().__init__()
        self.dense = torch.nn.Linear(fan_in, HIDDEN)
        self.LayerNorm = torch.nn.LayerNorm(HIDDEN, eps=EPS)

    def forward(self, x, residual):
        return self.LayerNorm(residual + self.dense(x))


class BertAttention(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.self = BertSelfAttention()
        self.output = BertDenseNorm(HIDDEN)

    def forward(self, x, mask):
        return self.output(self.self(x, mask), x)


class BertIntermediate(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.dense = torch.nn.Linear(HIDDEN, FFN)

    def forward(self, x):
        return torch.nn.functional.gelu(self.dense(x))  # the erf form, as BERT's "gelu"


class BertLayer(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.attention = BertAttention()
        self.intermediate = BertIntermediate()
        self.output = BertDenseNorm(FFN)

    def forward(self, x, mask):
        h = self.attention(x, mask)
        return self.output(self.intermediate(h), h)


class BertEncoder(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = torch.nn.ModuleList([BertLayer() for _ in range(LAYERS)])

    def forward(self, x, mask):
        for layer in self.layer:
            x = layer(x, mask)
        return x


class BertPooler(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.dense = torch.nn.Linear(HIDDEN, HIDDEN)

    def forward(self, x):
        return torch.tanh(self.dense(x[:, 0]))


class BertModel(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.embeddings = BertEmbeddings()
        self.encoder = BertEncoder()
        self.pooler = BertPooler()

    def forward(self, input_ids, token_type_ids, attention_mask):
        # BertModel's extended mask: 0 where attended, finfo.min where padded, broadcast over heads and
        # query positions.
        m = attention_mask[:, None, None, :].to(torch.float32)
        mask = (1.0 - m) * torch.finfo(torch.float32).min
        h = self.encoder(self.embeddings(input_ids, token_type_ids), mask)
        return h, self.pooler(h)


def seeded_bert(g):
    """A BertModel in eval mode with BERT's initialiser (normal, std 0.02) for embeddings and dense
    weights; biases and layer-norm parameters away from 0 and 1, so that a dropped bias or a swapped
    gamma/beta shows."""
    model = BertModel()
    count = sum(p.numel() for p in model.parameters())
    if count != BERT_BASE_PARAMS:
        raise Fail("the torch bert has %d parameters, BertModel %d" % (count, BERT_BASE_PARAMS))
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, (torch.nn.Linear, torch.nn.Embedding)):
                m.weight.copy_(torch.randn(m.weight.shape, generator=g) * 0.02)
            if isinstance(m, torch.nn.Linear):
                m.bias.copy_(uniform(m.bias.shape, -0.05, 0.05, g))
            if isinstance(m, torch.nn.LayerNorm):
                m.weight.copy_(uniform(m.weight.shape, 0.8, 1.2, g))
                m.bias.copy_(uniform(m.bias.shape, -0.1, 0.1, g))
    return model.eval()


def bert_inputs(batch, size, g):
    """input_ids (random, with both ends of the embedding table), token_type_ids (a split that differs
    between rows) and attention_mask (odd rows pad their last 40 positions, size // 3 when size <= 80),
    int64 [batch, size] each."""
    ids = torch.randint(0, VOCAB, (batch, size), generator=g)
    ids[0, 0] = 0  # both ends of the embedding table
    ids[batch - 1, size - 1] = VOCAB - 1
    pos = torch.arange(size)
    types = torch.stack([(pos >= (size // 3 if b % 2 else size // 2)).long() for b in range(batch)])
    pad = 40 if size > 80 else size // 3
    mask = torch.ones(batch, size, dtype=torch.long)
    mask[1::2, size - pad:] = 0
    return ids, types, mask


def bert(batch, size, out, g):
    if not 1 <= size <= POSITIONS:
        raise Fail("bert takes 1..%d positions, not %d" % (POSITIONS, size))
    model = seeded_bert(g)
    ids, types, mask = bert_inputs(batch, size, g)
    pad = int((mask == 0).sum(dim=1).max())
    with torch.no_grad():
        hidden, pooled = model(ids, types, mask)
        unmasked, _ = model(ids, types, torch.ones_like(mask))
    check_varies("last_hidden_state", hidden)
    check_varies("pooler_output", pooled)
    if batch > 1:
        moved = float((unmasked[1] - hidden[1]).abs().max())
        if moved <= 1e-3 * float(hidden.abs().max()):
            raise Fail("the attention mask changes nothing (max change %g)" % moved)
        print("padding row 1's last %d positions moves its hidden state by up to %.4g" % (pad, moved))
    torch.save(model.state_dict(), out + "/state.pt")
    write(out, "input_ids", ids, "<i8")
    write(out, "token_type_ids", types, "<i8")
    write(out, "attention_mask", mask, "<i8")
    write(out, "last_hidden_state", hidden, "<f4")
    write(out, "pooler_output", pooled, "<f4")


def main(name, batch, size, out):
    torch.manual_seed(1234)
    torch.set_num_threads(2)
    g = torch.Generator().manual_seed(99)
    try:
        if name == "vit":
            vit(batch, size, out, g)
        elif name == "bert":
            bert(batch, size, out, g)
        else:
            cnn(name, batch, size, out, g)
    except Fail as e:
        sys.stderr.write("conformance_torch.py %s: %s\n" % (name, e))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]))
