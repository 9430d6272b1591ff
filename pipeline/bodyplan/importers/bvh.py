"""stub"""


def import_bvh(path, **kw):
    raise NotImplementedError
